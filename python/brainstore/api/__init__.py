"""HTTP only: validate against the contract, call one service method, serialize."""
