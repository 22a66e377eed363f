"""Authentication: key parsing, the revocation registry, scopes per operation, the rate limit."""
