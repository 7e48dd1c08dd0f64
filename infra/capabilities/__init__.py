"""One construct per capability of the stack: data, api, gateway, schedule, mail, monitoring."""
