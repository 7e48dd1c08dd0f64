"""`credgate`: the self-hosted command line (serve, partners, jobs)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="credgate", description="Credential gateway for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the management API and the gateway")
    serve.add_argument("--data-dir", type=Path, required=True)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--api-port", type=int, default=10254)
    serve.add_argument("--gateway-port", type=int, default=10255)
    serve.add_argument(
        "--connect-to",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR:PORT",
        help="send the gateway's upstream connection for HOST:PORT to ADDR:PORT (TLS still verifies HOST)",
    )
    serve.add_argument("--upstream-ca-bundle", type=Path, help="extra trusted roots for upstream TLS")
    serve.add_argument("--owner-email", default=None, help="email of the local owner account (first start only)")
    serve.add_argument("--approval-timeout", type=int, default=180, help="seconds a held request waits for a decision")
    serve.add_argument("--drain-timeout", type=float, default=30.0, help="seconds to let in-flight requests finish on stop")
    serve.add_argument("--log-level", default="INFO")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from credgate_selfhosted.server import serve

        return serve(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
