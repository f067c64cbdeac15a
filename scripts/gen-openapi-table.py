#!/usr/bin/env python3
"""Derive plumb-kustomize's compact schema table from kustomize's OpenAPI bundle.

The strategic-merge engine needs three things from the Kubernetes 1.21.2 schema
that kustomize embeds: which definition describes each apiVersion/kind, how each
list or map field merges (patch strategy, merge keys, item or value type), and
whether a kind is namespace-scoped. Everything else in the bundle (descriptions,
formats, validation) is dropped so the table can be compiled into the binary.

Usage:
    scripts/gen-openapi-table.py [--input BUNDLE.json.gz] [--output TABLE.json]

The default input is ../shared/openapi/kubernetes-openapi-union-v1.21.2.bundle-v1.json.gz
relative to the repository root; the default output is
crates/plumb-kustomize/data/k8s-1.21.2-schema.json. Output is deterministic
(sorted keys, one definition per line) so regenerating shows a readable diff.

Table format (see crates/plumb-kustomize/data/README.md):
    {"_source": {...},
     "resources": {apiVersion: {kind: {"definition": name?, "namespaced": bool?}}},
     "definitions": {name: {"fields": {field: descriptor}}}}
A descriptor is {"ref": name} (an object), {"items": descriptor} (a list),
{"values": descriptor} (a map, from additionalProperties) or {} (a scalar),
plus "strategy", "key" and "mapKeys" when the field carries patch metadata.
"""

import argparse
import gzip
import hashlib
import json
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLE_NAME = "kubernetes-openapi-union-v1.21.2.bundle-v1.json.gz"
DEFAULT_INPUT = os.path.join(os.path.dirname(REPO_ROOT), "shared", "openapi", BUNDLE_NAME)
DEFAULT_OUTPUT = os.path.join(
    REPO_ROOT, "crates", "plumb-kustomize", "data", "k8s-1.21.2-schema.json"
)

REF_PREFIX = "#/definitions/"
SCALAR_TYPES = {"string", "integer", "number", "boolean"}


def fail(message):
    sys.exit(f"gen-openapi-table: {message}")


def ref_name(ref):
    if not ref.startswith(REF_PREFIX):
        fail(f"unsupported $ref {ref!r}")
    return ref[len(REF_PREFIX):]


class Converter:
    """Turns OpenAPI v2 property schemas into table descriptors."""

    def __init__(self, definitions):
        self.definitions = definitions
        self.referenced = set()

    def is_scalar_definition(self, name):
        # Quantity, Time, IntOrString and friends are strings on the wire; a
        # field of that type merges like any scalar, so it needs no entry.
        return self.definitions[name].get("type") in SCALAR_TYPES

    def descriptor(self, prop, where):
        """The descriptor for one schema, or None when it is a plain scalar."""
        desc = {}
        if "$ref" in prop:
            name = ref_name(prop["$ref"])
            if name not in self.definitions:
                fail(f"{where} refers to missing definition {name}")
            if not self.is_scalar_definition(name):
                desc["ref"] = name
                self.referenced.add(name)
        elif prop.get("type") == "array":
            items = prop.get("items")
            if not isinstance(items, dict):
                fail(f"{where} is an array without a single items schema")
            desc["items"] = self.descriptor(items, where + "[]") or {}
        elif "additionalProperties" in prop:
            values = prop["additionalProperties"]
            if isinstance(values, dict):
                desc["values"] = self.descriptor(values, where + "{}") or {}
        # kyaml reads the patch extensions from the field's own schema, whatever
        # its type (DeploymentSpec.strategy has retainKeys on an object).
        strategy = prop.get("x-kubernetes-patch-strategy")
        if strategy is not None:
            desc["strategy"] = strategy
            # kyaml's PatchStrategyAndKeyList consults the keys only when a
            # strategy is present, and prefers x-kubernetes-list-map-keys.
            if "x-kubernetes-patch-merge-key" in prop:
                desc["key"] = prop["x-kubernetes-patch-merge-key"]
            if "x-kubernetes-list-map-keys" in prop:
                desc["mapKeys"] = list(prop["x-kubernetes-list-map-keys"])
        return desc or None

    def definition(self, name):
        schema = self.definitions[name]
        fields = {}
        for field, prop in schema.get("properties", {}).items():
            desc = self.descriptor(prop, f"{name}.{field}")
            if desc is not None:
                fields[field] = desc
        table = {"fields": fields}
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            table["values"] = self.descriptor(values, name + "{}") or {}
        return table


def api_version(group, version):
    return f"{group}/{version}" if group else version


def build_table(bundle, input_sha256):
    if bundle.get("formatVersion") != 1:
        fail(f"unsupported bundle formatVersion {bundle.get('formatVersion')!r}")
    definitions = bundle["definitions"]

    # The bundle's resource list is the union of the GVKs advertised by the
    # definitions (x-kubernetes-group-version-kind) and by the API paths. Its
    # "scope" was computed by kustomize's openapi-bundle generator with the
    # same rule kyaml's findNamespaceability applies to the paths: a GET
    # operation tagged with the GVK under a path containing
    # "namespaces/{namespace}" makes it namespaced, any other tagged GET path
    # makes it cluster-scoped unless already namespaced, and a GVK with no
    # tagged GET path has no scope (kyaml: not found).
    resources = {}
    for resource in bundle["resources"]:
        entry = {}
        if "definition" in resource:
            if resource["definition"] not in definitions:
                fail(f"{resource} refers to a missing definition")
            entry["definition"] = resource["definition"]
        scope = resource.get("scope")
        if scope == "Namespaced":
            entry["namespaced"] = True
        elif scope == "Cluster":
            entry["namespaced"] = False
        elif scope is not None:
            fail(f"unknown scope {scope!r} for {resource}")
        kinds = resources.setdefault(resource["apiVersion"], {})
        if resource["kind"] in kinds:
            fail(f"duplicate resource {resource['apiVersion']} {resource['kind']}")
        kinds[resource["kind"]] = entry

    # Cross-check the definitions' own GVK extensions against the index, so a
    # bundle whose two views disagree is caught here rather than at merge time.
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            av = api_version(gvk.get("group", ""), gvk["version"])
            indexed = resources.get(av, {}).get(gvk["kind"], {}).get("definition")
            if indexed != name:
                fail(f"{av} {gvk['kind']} is tagged on {name} but indexed as {indexed}")

    converter = Converter(definitions)
    pending = sorted(
        {e["definition"] for kinds in resources.values() for e in kinds.values() if "definition" in e}
    )
    tables = {}
    while pending:
        name = pending.pop()
        if name in tables:
            continue
        tables[name] = converter.definition(name)
        pending.extend(sorted(converter.referenced - tables.keys()))

    source = {
        "bundle": BUNDLE_NAME,
        "bundleSha256": input_sha256,
        "origin": "kubernetes-sigs/kustomize kyaml/openapi/kubernetesapi (the schema kustomize embeds)",
        "kubernetesVersions": [s["kubernetesVersion"] for s in bundle.get("sources", [])],
        "upstreamSha256": [s["sha256"] for s in bundle.get("sources", [])],
        "license": "Apache-2.0, see LICENSE.kustomize in this directory",
        "generator": "scripts/gen-openapi-table.py",
    }
    return {"_source": source, "resources": resources, "definitions": tables}


def dumps(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def render(table):
    """JSON with one resource group and one definition per line."""
    lines = ["{", '"_source":' + dumps(table["_source"]) + ","]
    for section, last in (("resources", False), ("definitions", True)):
        entries = sorted(table[section].items())
        lines.append(dumps(section) + ":{")
        for i, (key, value) in enumerate(entries):
            comma = "," if i + 1 < len(entries) else ""
            lines.append(dumps(key) + ":" + dumps(value) + comma)
        lines.append("}" if last else "},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=DEFAULT_INPUT, help="kustomize OpenAPI bundle (.json.gz)")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="table to write")
    args = parser.parse_args()

    try:
        with open(args.input, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(f"cannot read bundle {args.input}: {e}")
    bundle = json.loads(gzip.decompress(raw))
    table = build_table(bundle, hashlib.sha256(raw).hexdigest())
    text = render(table)
    json.loads(text)  # the hand-laid-out JSON must still parse

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    kinds = sum(len(k) for k in table["resources"].values())
    print(
        f"wrote {args.output}: {len(text.encode())} bytes, {kinds} GVKs, "
        f"{len(table['definitions'])} definitions",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
