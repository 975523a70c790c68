#!/usr/bin/env python3
"""Writes standalone, strict JSON schemas of Kubernetes kinds, for
kubeconform, from the OpenAPI (swagger 2.0) spec that ships in the
k8s.io/kubernetes Go module (api/openapi-spec/swagger.json), so that
`make test-deploy` validates deploy/ with no network: `make tools` fetches
the module through the Go module proxy and runs this once.

    kubeschemas.py --swagger SWAGGER.json --out DIR KIND...

writes DIR/<kind>-<group>-<version>.json (<kind>-<version>.json for the
core group), the names kubeconform's -schema-location template
{{ .ResourceKind }}{{ .KindSuffix }}.json looks for. Every $ref is inlined
(standalone); every object with properties refuses others (strict);
IntOrString takes a string or an integer and Quantity a string or a
number, as kubectl accepts them; apiVersion and kind must name the kind.
Standard library only.
"""

import argparse
import json
import os
import sys

INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
PREFIX = "#/definitions/"
DOC_KEYS = ("description", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key")


def inline(node, defs, stack):
    """node with every $ref replaced by its definition; a definition that
    refers to itself (none of the workload kinds do) becomes {} there."""
    if isinstance(node, list):
        return [inline(n, defs, stack) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if ref is not None:
        name = ref[len(PREFIX):]
        if name == INT_OR_STRING:
            return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        if name == QUANTITY:
            return {"oneOf": [{"type": "string"}, {"type": "number"}]}
        if name in stack:
            return {}
        return inline(defs[name], defs, stack | {name})
    # Documentation keys go (they hold strings); a field named like one,
    # inside "properties", holds a schema (a dict) and stays.
    out = {k: inline(v, defs, stack) for k, v in node.items() if not (k in DOC_KEYS and isinstance(v, str))}
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--swagger", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("kinds", nargs="+", help="kinds to write, e.g. Deployment Service Secret")
    a = p.parse_args(argv)
    with open(a.swagger) as f:
        defs = json.load(f)["definitions"]
    os.makedirs(a.out, exist_ok=True)
    want = set(a.kinds)
    written = set()
    for name, d in sorted(defs.items()):
        for gvk in d.get("x-kubernetes-group-version-kind", []):
            if gvk["kind"] not in want or name.startswith("io.k8s.apimachinery"):
                continue
            group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
            api = f"{group}/{version}" if group else version
            schema = inline(d, defs, {name})
            schema["properties"]["apiVersion"] = {"type": "string", "enum": [api]}
            schema["properties"]["kind"] = {"type": "string", "enum": [kind]}
            schema["$schema"] = "http://json-schema.org/schema#"
            suffix = (f"-{group.split('.')[0]}" if group else "") + f"-{version}"
            path = os.path.join(a.out, f"{kind.lower()}{suffix.lower()}.json")
            with open(path + ".tmp", "w") as f:
                json.dump(schema, f, separators=(",", ":"), sort_keys=True)
            os.replace(path + ".tmp", path)
            written.add(kind)
    missing = want - written
    if missing:
        print(f"kubeschemas: no kind {', '.join(sorted(missing))} in {a.swagger}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
