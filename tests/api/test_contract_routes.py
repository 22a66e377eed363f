"""The app's routes, methods and query parameters equal openapi.yaml's."""

from __future__ import annotations

from brainstore.api.contract import BASE_PATH, OPERATIONS
from tests.contract.openapi import contract_routes, iter_operations


def test_routes_equal_the_contract() -> None:
    served = {(op.method, BASE_PATH + op.path) for op in OPERATIONS}
    assert served == contract_routes()


def test_query_parameters_equal_the_contract() -> None:
    declared = {}
    for _method, _path, op in iter_operations():
        params = {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
        declared[op["operationId"]] = params
    assert {op.id: set(op.query) for op in OPERATIONS} == declared
