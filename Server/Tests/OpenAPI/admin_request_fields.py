"""Prints, as JSON, each admin operation of openapi.yaml that may take a body: its request
schema's fields and whether it allows others. Read by OpenAPIInStepTests.

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
    for method in ("post", "put", "patch"):
        operation = item.get(method)
        if operation is None:
            continue
        body = operation.get("requestBody")
        if body is None:
            result[method.upper() + " " + normalized] = {"fields": [], "has_body": False, "additional": None}
            continue
        schema = resolve(body["content"]["application/json"]["schema"])
        result[method.upper() + " " + normalized] = {
            "fields": sorted(schema.get("properties", {}).keys()),
            "has_body": True,
            "additional": schema.get("additionalProperties", True),
        }
print(json.dumps(result))
