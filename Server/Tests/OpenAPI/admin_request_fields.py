"""Prints, as JSON, each admin operation of openapi.yaml: the permission it names
(`x-keylight-permission`) and, for those that may take a body, its request schema's fields and
whether it allows others. Read by OpenAPIInStepTests.

    python3 admin_request_fields.py path/to/openapi.yaml"""
import json
import sys

import yaml

document = yaml.safe_load(open(sys.argv[1]))
schemas = document["components"]["schemas"]


def resolve(schema):
    while "$ref" in schema:
        schema = schemas[schema["$ref"].split("/")[-1]]
    return schema


result = {}
for path, item in document["paths"].items():
    if not path.startswith("/admin/v1"):
        continue
    normalized = "/".join("{}" if part.startswith("{") else part for part in path.split("/"))
    for method in ("get", "delete", "post", "put", "patch"):
        operation = item.get(method)
        if operation is None:
            continue
        entry = {"fields": [], "has_body": False, "additional": None, "permission": operation.get("x-keylight-permission")}
        body = operation.get("requestBody")
        if body is not None and "application/json" in body["content"]:
            schema = resolve(body["content"]["application/json"]["schema"])
            entry.update(fields=sorted(schema.get("properties", {}).keys()), has_body=True, additional=schema.get("additionalProperties", True))
        result[method.upper() + " " + normalized] = entry
print(json.dumps(result))
