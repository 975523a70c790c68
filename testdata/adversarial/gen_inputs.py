#!/usr/bin/env python3
"""Writes inputs.json: the bad inputs that the Go suite
(internal/adversarial) and the Python suite (python/tests/test_adversarial.py)
both send over the wire to a real flightd. Run it after editing:

    python3 testdata/adversarial/gen_inputs.py

Every input names a call and what it sends; "code" is the gRPC code the
server must answer. Both suites build the same fixture first (see
"fixture") and expand these templates in strings: {{commit}} (main's head),
{{commit8}} (its first 8 digits), {{root}} (the root commit), {{run}} and
{{run8}} (the fixture's run), {{rep:N:S}} (S repeated N times).
"encoding": "latin1" sends each character below U+0100 as that one byte
(invalid UTF-8 on purpose); otherwise strings go as UTF-8.
"""

import json
import os

INPUTS = []
SEEN = set()


def add(category, name, call, code, **kw):
    row = {"category": category, "name": name, "call": call, "code": code}
    row.update(kw)
    key = json.dumps({k: v for k, v in row.items() if k not in ("name", "code", "category")}, sort_keys=True)
    assert key not in SEEN, f"duplicate input: {name}"
    SEEN.add(key)
    INPUTS.append(row)


IA, NF, AE = "InvalidArgument", "NotFound", "AlreadyExists"

# Values that are not a name (project, branch, table): all InvalidArgument.
BAD_NAMES = {
    "empty": "",
    "dot": ".",
    "dotdot": "..",
    "slash": "a/b",
    "leading slash": "/adv",
    "traversal": "../../etc",
    "space": "a b",
    "tab": "a\tb",
    "newline": "a\nb",
    "nul": "a\u0000b",
    "unicode": "h\u00e9llo",
    "emoji": "\U0001F600",
    "rtl override": "a\u202eb",
    "reserved prefix": ".weft",
    "reserved prefix long": ".weft-tmp",
    "129 chars": "{{rep:129:a}}",
    "64 KiB": "{{rep:65536:n}}",
    "hex 8": "deadbeef",
    "hex 64": "{{rep:64:a}}",
    "hex upper": "DEADBEEF01",
    "percent": "a%2fb",
    "backslash": "a\\b",
    "colon": "c:",
    "star": "*",
}

# JSON values of the wrong type for a string field.
NOT_STRINGS = {"null": None, "number": 1, "float": 1.5, "bool": True, "list": ["adv"], "object": {"p": "adv"}}
# JSON texts (raw) that are bad for an integer field.
BAD_INTS = {
    "null": "null", "string": '"1"', "float": "1.5", "exp": "1e3", "bool": "true", "list": "[1]", "object": "{}",
    "2^63": "9223372036854775808", "-2^63-1": "-9223372036854775809", "1e400": "1e400", "huge": "1" + "0" * 400,
    "nan string": '"NaN"', "inf string": '"Infinity"', "hex": '"0x10"', "neg zero float": "-0.0",
}

RUN = '"run": "{{run}}"'


def raw(obj):
    return json.dumps(obj, ensure_ascii=False)


# ------------------------------------------------------------ commands
def cmd(name, body, code=IA, calls=("info",), **kw):
    for c in calls:
        add("command", name + ("" if c == "info" else " [schema]"), c, code, body=body, **kw)


# Not an object at all.
for name, body in {
    "empty": "", "space": " ", "null": "null", "true": "true", "number": "1", "string": '"run"', "list": "[]",
    "list of object": "[{}]", "open brace": "{", "close brace": "}", "truncated": '{"run": "{{run}}"',
    "trailing object": '{"run": "{{run}}"} {}', "trailing garbage": '{"run": "{{run}}"}x', "two nulls": "null null",
    "bom": "\ufeff{\"run\": \"{{run}}\"}", "nul byte": "\u0000", "control char": "{\"run\": \"a\u0001\"}",
    "single quotes": "{'run': 'x'}", "unquoted key": "{run: 1}", "comment": '{"run": "{{run}}" /* c */}',
    "trailing comma": '{"run": "{{run}}",}', "nan literal": '{"run": "{{run}}", "world_size": NaN}',
    "infinity literal": '{"run": "{{run}}", "start_step": Infinity}', "empty object": "{}",
    "deep list": "{{rep:10000:[}}", "deep object": '{{rep:5000:{"a":}}1', "deep recipe": '{"recipe": {{rep:3000:[}}',
    "unknown command": '{"sample": {}}', "unknown plus run": '{"run": "{{run}}", "extra": 1}',
    "case variant key": '{"run": "{{run}}", "World_Size": 1, "world_size": 1, "x": 0}',
    "duplicate run": '{"run": "{{run}}", "run": "nope"}', "lone surrogate": '{"run": "\\ud800"}',
    "escaped nul": '{"run": "\\u0000"}', "1 MiB string": '{"run": "{{rep:1048576:a}}"}',
    "many keys": "{" + ",".join(f'"k{i}": {i}' for i in range(2000)) + "}",
}.items():
    cmd(name, body, calls=("info", "schema"))
cmd("invalid utf-8", '{"run": "\u00ff\u00fe"}', encoding="latin1", calls=("info", "schema"))
cmd("invalid utf-8 key", '{"r\u00ffn": 1}', encoding="latin1")
cmd("overlong utf-8", '{"run": "\u00c0\u00af"}', encoding="latin1")
cmd("latin1 body", "\u00ff\u00fe\u00fd", encoding="latin1")

# The run command's integer fields.
for field in ("world_size", "start_step", "end_step"):
    for vname, v in BAD_INTS.items():
        cmd(f"{field} {vname}", "{" + RUN + f', "{field}": {v}' + "}")
for name, body, code in [
    ("world_size 0", RUN + ', "world_size": 0', IA),
    ("world_size -1", RUN + ', "world_size": -1', IA),
    ("world_size 3 does not divide 4", RUN + ', "world_size": 3', IA),
    ("world_size 8 > batch", RUN + ', "world_size": 8', IA),
    ("world_size 2^20", RUN + ', "world_size": 1048576', IA),
    ("world_size 2^31", RUN + ', "world_size": 2147483648', IA),
    ("world_size 2^62", RUN + ', "world_size": 4611686018427387904', IA),
    ("world_size min int64", RUN + ', "world_size": -9223372036854775808', IA),
    ("start_step -1", RUN + ', "start_step": -1', IA),
    ("start_step at end", RUN + ', "start_step": 5', IA),
    ("start_step 2^62", RUN + ', "start_step": 4611686018427387904', IA),
    ("start_step max int64", RUN + ', "start_step": 9223372036854775807', IA),
    ("end_step -1", RUN + ', "end_step": -1', IA),
    ("end_step past end", RUN + ', "end_step": 6', IA),
    ("end_step = start_step", RUN + ', "start_step": 2, "end_step": 2', IA),
    ("end_step < start_step", RUN + ', "start_step": 3, "end_step": 1', IA),
    ("end_step max int64", RUN + ', "end_step": 9223372036854775807', IA),
    ("end_step min int64", RUN + ', "end_step": -9223372036854775808', IA),
]:
    cmd(name, "{" + body + "}", code, calls=("info", "schema") if "world" in name else ("info",))

# The run id.
for name, v, code in [
    ("run empty", '""', IA), ("run x", '"x"', IA), ("run 7 hex", '"0123456"', IA), ("run 65 hex", '"{{rep:65:a}}"', IA),
    ("run upper", '"{{rep:64:A}}"', IA), ("run non-hex 64", '"{{rep:64:g}}"', IA), ("run unicode", '"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"', IA),
    ("run traversal", '"../../../etc/passwd"', IA), ("run slash", '"abcdef01/x"', IA), ("run 64 KiB", '"{{rep:65536:f}}"', IA),
    ("run unknown", '"{{rep:64:0}}"', NF), ("run unknown prefix", '"00000000"', NF), ("run is a commit", '"{{commit}}"', NF),
    ("run prefix with space", '" {{run8}}"', IA), ("run prefix nul", '"{{run8}}\\u0000"', IA),
    ("run spaces", '"        "', IA),
]:
    cmd(name, '{"run": ' + v + "}", code, calls=("info", "schema"))
for vname, v in NOT_STRINGS.items():
    cmd(f"run {vname}", '{"run": ' + raw(v) + "}", calls=("info", "schema"))

# Scan commands.
SCAN = {"project": "adv", "ref": "main", "table": "t"}
for vname, v in NOT_STRINGS.items():
    cmd(f"scan {vname}", raw({"scan": v}), calls=("info", "schema"))
cmd("scan string", raw({"scan": "adv/main/t"}))
cmd("scan empty object", raw({"scan": {}}), calls=("info", "schema"))
for f in SCAN:
    cmd(f"scan missing {f}", raw({"scan": {k: v for k, v in SCAN.items() if k != f}}), calls=("info", "schema"))
    for vname, v in NOT_STRINGS.items():
        cmd(f"scan {f} {vname}", raw({"scan": dict(SCAN, **{f: v})}))
for f in ("project", "table"):
    for nname, n in BAD_NAMES.items():
        cmd(f"scan {f} {nname}", raw({"scan": dict(SCAN, **{f: n})}))
for f in ("project", "table", "ref"):
    cmd(f"scan {f} unknown", raw({"scan": dict(SCAN, **{f: "nope"})}), NF, calls=("info", "schema"))
for name, ref, code in [
    ("ref empty", "", IA), ("ref dotdot", "..", NF), ("ref slash", "main/x", NF), ("ref HEAD", "HEAD", NF),
    ("ref tilde", "main~1", NF), ("ref caret", "main^", NF), ("ref refs/heads", "refs/heads/main", NF),
    ("ref 7 hex", "{{rep:7:0}}", NF), ("ref 7 of commit", "{{commit8}}x", NF), ("ref unknown commit", "{{rep:64:0}}", NF),
    ("ref upper commit", "{{rep:64:A}}", NF), ("ref 65 hex", "{{rep:65:a}}", NF), ("ref unknown prefix", "00000000", NF),
    ("ref 64 KiB", "{{rep:65536:r}}", NF), ("ref unicode", "m\u00e4in", NF), ("ref space", "main ", NF),
    ("ref newline", "main\n", NF), ("ref nul", "main\u0000", NF), ("ref 129", "{{rep:129:m}}", NF),
    ("ref run id", "{{run}}", NF),
]:
    cmd(f"scan {name}", raw({"scan": dict(SCAN, ref=ref)}), code)
for name, cols, code in [
    ("columns null", None, IA), ("columns string", "id", IA), ("columns number", [1], IA), ("columns null item", [None], IA),
    ("columns unknown", ["nope"], IA), ("columns empty name", [""], IA), ("columns object", {"id": 1}, IA),
    ("columns list in list", [["id"]], IA), ("columns _row", ["_row"], IA), ("columns 10k unknown", ["nope"] * 10000, IA),
    ("columns case", ["ID"], IA), ("columns 64 KiB", ["{{rep:65536:c}}"], IA), ("columns unicode", ["\u00efd"], IA),
    ("columns mixed", ["id", "nope"], IA),
]:
    cmd(f"scan {name}", raw({"scan": dict(SCAN, columns=cols)}), code)
cmd("scan columns 10k unknown", '{"scan": {"project": "adv", "ref": "main", "table": "t", "columns": [{{rep:9999:"nope", }}"nope"]}}')
cmd("scan unknown field", raw({"scan": dict(SCAN, where="id > 1")}))
for fname, f in (("syntax", "id >"), ("unknown column", "nope = 1"), ("type", "id = 'x'"), ("deep", "(" * 5000 + "id = 1" + ")" * 5000),
                 ("number", 7), ("null byte", "id = 1\u0000"), ("huge in", "id IN (" + ",".join(["1"] * 20000) + ")")):
    cmd(f"scan filter {fname}", raw({"scan": dict(SCAN, filter=f)}))
cmd("scan with world_size", raw({"scan": SCAN, "world_size": 1}))
cmd("scan with run", raw({"scan": SCAN, "run": "{{run}}"}))
cmd("scan with start_step", raw({"scan": SCAN, "start_step": 1}))
cmd("scan with recipe", raw({"scan": SCAN, "recipe": {}}))
cmd("scan trailing", raw({"scan": SCAN}) + "]")

# Recipes. R is the fixture's run's recipe (world size 2 resolves it).
COMP = {"project": "adv", "table": "t"}
R = {"seed": 1, "batch_size": 4, "components": [COMP]}


def recipe(name, rec, code=IA, world=None, extra=None, calls=("info",)):
    body = {"recipe": rec}
    if world is not None:
        body["world_size"] = world
    body.update(extra or {})
    cmd("recipe " + name, raw(body), code, calls=calls)


for vname, v in NOT_STRINGS.items():
    if vname != "object":
        recipe(vname, v, calls=("info", "schema"))
recipe("string", "seed=1")
recipe("empty", {}, calls=("info", "schema"))
for f in ("seed", "batch_size", "components"):
    recipe(f"missing {f}", {k: v for k, v in R.items() if k != f}, calls=("info", "schema"))
for f in ("seed", "batch_size", "steps"):
    for vname, v in BAD_INTS.items():
        if vname == "neg zero float" or (f == "seed" and vname == "2^63"):  # seed is a uint64
            continue
        base = raw({k: v2 for k, v2 in R.items() if k != f})[:-1]
        cmd(f"recipe {f} {vname}", '{"recipe": ' + base + f', "{f}": {v}' + "}}")
for name, v in [("batch_size 0", 0), ("batch_size -1", -1), ("batch_size 2^20+1", 1048577), ("batch_size 2^31", 2147483648),
                ("batch_size min int64", -9223372036854775808)]:
    recipe(name, dict(R, batch_size=v))
for name, v in [("steps 0", 0), ("steps -1", -1), ("steps min int64", -9223372036854775808)]:
    recipe(name, dict(R, steps=v))
cmd("recipe seed 2^64", '{"recipe": {"batch_size": 4, "components": [{"project": "adv", "table": "t"}], "seed": 18446744073709551616}}')
recipe("seed -1", dict(R, seed=-1))
for vname, v in NOT_STRINGS.items():
    if vname != "list":
        recipe(f"components {vname}", dict(R, components=v))
recipe("components empty", dict(R, components=[]), calls=("info", "schema"))
recipe("components list of lists", dict(R, components=[[]]))
recipe("components list of strings", dict(R, components=["adv/t"]))
cmd("recipe components 100000", '{"recipe": {"seed": 1, "batch_size": 4, "components": [{{rep:99999:{"project": "adv", "table": "t"}, }}{"project": "adv", "table": "t"}]}}')
recipe("component empty", dict(R, components=[{}]), calls=("info", "schema"))
recipe("component unknown field", dict(R, components=[dict(COMP, where="x")]))
recipe("component bad filter", dict(R, components=[dict(COMP, filter="id >")]))
for f in ("project", "table"):
    recipe(f"component missing {f}", dict(R, components=[{k: v for k, v in COMP.items() if k != f}]))
    for vname, v in NOT_STRINGS.items():
        recipe(f"component {f} {vname}", dict(R, components=[dict(COMP, **{f: v})]))
    for nname, n in BAD_NAMES.items():
        recipe(f"component {f} {nname}", dict(R, components=[dict(COMP, **{f: n})]))
    recipe(f"component {f} unknown", dict(R, components=[dict(COMP, **{f: "nope"})]), NF, calls=("info", "schema"))
for vname, v in NOT_STRINGS.items():
    if vname != "null":
        recipe(f"component ref {vname}", dict(R, components=[dict(COMP, ref=v)]))
for name, ref, code in [("unknown", "nope", NF), ("dotdot", "..", NF), ("unknown commit", "{{rep:64:0}}", NF),
                        ("7 hex", "abcdef0", NF), ("64 KiB", "{{rep:65536:r}}", NF), ("slash", "a/b", NF),
                        ("unicode", "\u00e9", NF), ("unknown prefix", "00000000", NF)]:
    recipe(f"component ref {name}", dict(R, components=[dict(COMP, ref=ref)]), code)
for name, w in [("0", 0), ("-1", -1), ("-0.0", -0.0), ("1e-400", "1e-400"), ("1e400", "1e400"), ("string", "1"), ("bool", True),
                ("list", [1]), ("object", {}), ("min float", "-1.7976931348623157e308"), ("nan string", "NaN")]:
    if isinstance(w, str) and w[0] in "-1" and name not in ("string",):
        cmd(f"recipe weight {name}", '{"recipe": {"seed": 1, "batch_size": 4, "components": [{"project": "adv", "table": "t", "weight": ' + w + "}]}}")
    else:
        recipe(f"weight {name}", dict(R, components=[dict(COMP, weight=w)]))
recipe("weight null", dict(R, components=[dict(COMP, weight=None)]))
recipe("one weight 0", dict(R, components=[dict(COMP, weight=1), dict(COMP, weight=0)]))
for name, cols, code in [("unknown", ["nope"], IA), ("empty name", [""], IA), ("_row", ["_row"], IA), ("_component", ["_component"], IA),
                         ("twice", ["id", "id"], IA), ("null", None, IA), ("number", [1], IA), ("string", "id", IA),
                         ("null item", ["id", None], IA), ("case", ["Id"], IA)]:
    recipe(f"columns {name}", dict(R, components=[dict(COMP, columns=cols)]), code)
recipe("columns differ between components", dict(R, components=[dict(COMP, columns=["id"]), {"project": "adv", "table": "u", "columns": ["id"]}]))
recipe("columns missing in second", dict(R, components=[dict(COMP, columns=["x"]), {"project": "adv", "table": "u", "columns": ["x"]}]))
recipe("tables with other columns", dict(R, components=[COMP, {"project": "adv", "table": "u"}]))
for name, sh in [("null", None), ("list", []), ("empty", {}), ("negative", {"buffer_rows": -1}), ("string", {"buffer_rows": "1"}),
                 ("float", {"buffer_rows": 1.5}), ("unknown field", {"buffer_rows": 1, "seed": 2}), ("buffer null", {"buffer_rows": None}),
                 ("min int64", {"buffer_rows": -9223372036854775808}), ("number", 5)]:
    recipe(f"shuffle {name}", dict(R, shuffle=sh))
recipe("unknown field", dict(R, filter="x"))
recipe("unknown field case", dict(R, Seeds=2))
# Rejected only after the recipe resolves: a new seed each, so that a run
# record stored by mistake is a new object (the fixture's run exists).
recipe("world_size does not divide (new run)", dict(R, seed=101), world=3, calls=("info", "schema"))
recipe("world_size 0 (new run)", dict(R, seed=102), world=0)
recipe("start_step past end (new run)", dict(R, seed=103), extra={"start_step": 5}, calls=("info", "schema"))
recipe("end_step -1 (new run)", dict(R, seed=104), extra={"end_step": -1}, calls=("info", "schema"))
recipe("end_step past end (new run)", dict(R, seed=105), extra={"end_step": 99})
recipe("start_step -1 (new run)", dict(R, seed=106), extra={"start_step": -1})
recipe("world_size 5 (new run)", dict(R, seed=107, batch_size=10), world=4)
recipe("recipe and run", R, extra={"run": "{{run}}"})
recipe("unknown project (new run)", dict(R, seed=108, components=[COMP, {"project": "nope", "table": "t"}]), NF)
recipe("unknown table second (new run)", dict(R, seed=109, components=[COMP, {"project": "adv", "table": "nope"}]), NF)
recipe("unknown column second (new run)", dict(R, seed=110, components=[COMP, dict(COMP, columns=["id", "nope"])]))

# Keys differing only in case: encoding/json would accept them; the protocol's names are exact.
cmd("scan key case Project", raw({"scan": {"Project": "adv", "ref": "main", "table": "t"}}))
cmd("scan key case SCAN", raw({"SCAN": SCAN}))
cmd("run key case Run", raw({"Run": "{{run}}", "world_size": 2}))
cmd("run key case World_Size", raw({"run": "{{run}}", "World_Size": 2}))
recipe("key case Seed", {"Seed": 1, "batch_size": 4, "components": [COMP]})
recipe("key case Batch_Size", {"seed": 1, "Batch_Size": 4, "components": [COMP]})
recipe("component key case TABLE", dict(R, components=[{"project": "adv", "TABLE": "t"}]))
recipe("shuffle key case", dict(R, shuffle={"Buffer_Rows": 8}))

# ------------------------------------------------------------ actions
def act(action, name, body, code=IA, **kw):
    add("action", f"{action} {name}", "action", code, action=action, body=body, **kw)


for a in ("create_project", "create_branch", "list_branches", "log"):
    for name, body in {"empty": "", "null": "null", "list": "[]", "string": '"adv"', "number": "7", "empty object": "{}",
                       "truncated": '{"project": "adv"', "trailing": '{"project": "adv"} {}', "unknown field": '{"project": "adv", "x": 1}',
                       "deep": "{{rep:10000:[}}", "bom": "\ufeff{}", "nul": "\u0000"}.items():
        act(a, name, body)
    act(a, "invalid utf-8", '{"project": "\u00ff"}', encoding="latin1")
    for vname, v in NOT_STRINGS.items():
        act(a, f"project {vname}", raw({"project": v}))
    if a != "create_project":
        act(a, "project unknown", raw({"project": "nope", "branch": "b"} if a == "create_branch" else {"project": "nope"}), NF)
for nname, n in BAD_NAMES.items():
    act("create_project", f"name {nname}", raw({"project": n}))
act("create_project", "exists", raw({"project": "adv"}), AE)
for a in ("create_project", "list_branches", "log"):
    act(a, "key case Project", raw({"Project": "adv"}))
act("create_branch", "key case Branch", raw({"project": "adv", "Branch": "b2", "from": "main"}))
act("create_project", "extra branch field", raw({"project": "adv2", "branch": "main"}))
for nname, n in BAD_NAMES.items():
    act("create_branch", f"name {nname}", raw({"project": "adv", "branch": n}))
for name, b in [("commit id", "{{commit}}"), ("commit prefix", "{{commit8}}"), ("root id", "{{root}}"), ("run id", "{{run}}"),
                ("hex 12", "abcdefabcdef"), ("hex mixed case", "AbCdEf0123")]:
    act("create_branch", f"name {name}", raw({"project": "adv", "branch": b}))
act("create_branch", "exists main", raw({"project": "adv", "branch": "main"}), AE)
act("create_branch", "exists dev", raw({"project": "adv", "branch": "dev", "from": "main"}), AE)
act("create_branch", "missing branch", raw({"project": "adv"}))
act("create_branch", "missing project", raw({"branch": "b2"}))
for vname, v in NOT_STRINGS.items():
    act("create_branch", f"branch {vname}", raw({"project": "adv", "branch": v}))
    if vname != "null":
        act("create_branch", f"from {vname}", raw({"project": "adv", "branch": "b2", "from": v}))
for name, f, code in [("unknown", "nope", NF), ("dotdot", "..", NF), ("unknown commit", "{{rep:64:0}}", NF), ("7 hex", "abcdef0", NF),
                      ("unknown prefix", "00000000", NF), ("64 KiB", "{{rep:65536:f}}", NF), ("slash", "a/b", NF), ("run id", "{{run}}", NF),
                      ("unicode", "\u00e9", NF), ("space", "main ", NF)]:
    act("create_branch", f"from {name}", raw({"project": "adv", "branch": "b2", "from": f}), code)
act("list_branches", "extra ref", raw({"project": "adv", "ref": "main"}))
for nname, n in list(BAD_NAMES.items())[:12]:
    act("list_branches", f"name {nname}", raw({"project": n}))
    act("log", f"name {nname}", raw({"project": n}))
for name, lim in BAD_INTS.items():
    add("action", f"log limit {name}", "action", IA, action="log", body='{"project": "adv", "limit": ' + lim + "}")
for name, lim in [("0", 0), ("-1", -1), ("min int64", -9223372036854775808)]:
    act("log", f"limit {name}", raw({"project": "adv", "limit": lim}))
for name, ref, code in [("unknown", "nope", NF), ("dotdot", "..", NF), ("unknown commit", "{{rep:64:0}}", NF), ("7 hex", "abcdef0", NF),
                        ("64 KiB", "{{rep:65536:f}}", NF), ("slash", "a/b", NF), ("number", 1, IA), ("null", None, IA), ("list", [], IA)]:
    act("log", f"ref {name}", raw({"project": "adv", "ref": ref}), code)
for t in ["", "CREATE_PROJECT", "create_project ", " create_project", "drop_table", "delete_branch", "DoPut", "create-project",
          "{{rep:65536:x}}", "create_project\u0000", "\u00e9", "log\n", "list_actions", "gc", "../create_project"]:
    add("action", f"unknown action {t[:24]!r}", "action", IA, action=t, body=raw({"project": "adv"}))

# ------------------------------------------------------------ descriptor paths
PATHS = [
    ("none", [], IA), ("one", ["adv"], IA), ("two", ["adv", "main"], IA), ("four", ["adv", "main", "t", "x"], IA),
    ("ten", ["adv"] * 10, IA), ("all empty", ["", "", ""], IA), ("empty project", ["", "main", "t"], IA),
    ("empty ref", ["adv", "", "t"], IA), ("empty table", ["adv", "main", ""], IA),
    ("unknown project", ["nope", "main", "t"], NF), ("unknown ref", ["adv", "nope", "t"], NF), ("unknown table", ["adv", "main", "nope"], NF),
    ("unknown commit", ["adv", "{{rep:64:0}}", "t"], NF), ("7 hex ref", ["adv", "{{rep:7:0}}", "t"], NF),
    ("upper commit", ["adv", "{{rep:64:F}}", "t"], NF), ("ref dotdot", ["adv", "..", "t"], NF), ("ref slash", ["adv", "main/t", "t"], NF),
    ("ref 64 KiB", ["adv", "{{rep:65536:r}}", "t"], NF), ("project is commit", ["{{commit}}", "main", "t"], IA),
    ("table is commit prefix", ["adv", "main", "{{commit8}}"], IA), ("run as ref", ["adv", "{{run}}", "t"], NF),
    ("table of other commit root", ["adv", "{{root}}", "t"], NF),
]
for nname, n in BAD_NAMES.items():
    if n == "":
        continue
    PATHS.append((f"project {nname}", [n, "main", "t"], IA))
    PATHS.append((f"table {nname}", ["adv", "main", n], IA))
for name, path, code in PATHS:
    add("path", f"info {name}", "info_path", code, path=path)
for name, path, code in PATHS[:22]:
    add("path", f"schema {name}", "schema_path", code, path=path)

# Names so long that echoing them would break gRPC's metadata limit (issue 11 item 5).
add("path", "info project 17 MiB", "info_path", IA, path=["{{rep:17825792:n}}", "main", "t"])
add("path", "info ref 17 MiB", "info_path", IA, path=["adv", "{{rep:17825792:r}}", "t"])
cmd("scan table 17 MiB", raw({"scan": dict(SCAN, table="{{rep:17825792:t}}")}))
act("create_project", "name 17 MiB", raw({"project": "{{rep:17825792:p}}"}))
add("put", "put table 17 MiB", "put_path", IA, path=["adv", "main", "{{rep:17825792:t}}"])

# ------------------------------------------------------------ DoPut paths (a good 3-row batch of t's schema)
PUTS = [
    ("none", [], IA), ("one", ["adv"], IA), ("two", ["adv", "main"], IA), ("four", ["adv", "main", "t", "x"], IA),
    ("empty project", ["", "main", "t"], IA), ("empty branch", ["adv", "", "t"], IA), ("empty table", ["adv", "main", ""], IA),
    ("unknown project", ["nope", "main", "t"], NF), ("unknown branch", ["adv", "nope", "t"], NF),
    ("commit id", ["adv", "{{commit}}", "t"], IA), ("commit prefix", ["adv", "{{commit8}}", "t"], IA),
    ("root commit", ["adv", "{{root}}", "t"], IA), ("unknown commit", ["adv", "{{rep:64:0}}", "t"], IA),
    ("upper commit", ["adv", "{{rep:64:A}}", "t"], IA), ("12 hex prefix", ["adv", "{{commit8}}abcd", "t"], IA),
    ("run id as branch", ["adv", "{{run}}", "t"], IA), ("branch tilde", ["adv", "main~1", "t"], IA),
    ("branch HEAD unknown", ["adv", "HEAD", "t"], NF), ("table hex", ["adv", "main", "deadbeef"], IA),
]
for nname, n in BAD_NAMES.items():
    if n == "" or nname.startswith("hex"):
        continue
    PUTS.append((f"project {nname}", [n, "main", "t"], IA))
    PUTS.append((f"branch {nname}", ["adv", n, "t"], IA))
    PUTS.append((f"table {nname}", ["adv", "main", n], IA))
for name, path, code in PUTS:
    add("put", f"put {name}", "put_path", code, path=path)

# ------------------------------------------------------------ ListFlights criteria
for name, crit, code in [("dotdot", "..", IA), ("slash", "a/b", IA), ("129", "{{rep:129:a}}", IA), ("64 KiB", "{{rep:65536:l}}", IA),
                         ("unknown", "nope", NF), ("hex", "deadbeef", IA), ("unicode", "\u00e9", IA), ("json", '{"project": "adv"}', IA),
                         ("nul", "a\u0000", IA), ("invalid utf-8", "\u00ff", IA)]:
    add("list", f"list_flights {name}", "list_flights", code, body=crit, **({"encoding": "latin1"} if "utf-8" in name else {}))

# ------------------------------------------------------------ static tickets
for name, t in [("empty", ""), ("magic only", "weft"), ("header only", "weft\u0001\u0001"),
                ("no checksum", 'weft\u0001\u0001{"p":"adv"}'), ("zero checksum", 'weft\u0001\u0001{}' + "\u0000" * 8),
                ("random 16", "\u0093\u00a7\u0011\u00fe\u0042\u0010\u0000\u00ff\u00c3\u0028\u00a0\u00a1\u00e2\u0028\u00a1\u0000"),
                ("all 0xff", "\u00ff" * 40), ("all zero", "\u0000" * 64), ("json", '{"p":"adv","t":"t"}'),
                ("wrong magic", "WEFT\u0001\u0001{}\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000"),
                ("65 KiB", "{{rep:66560:w}}"), ("path", "adv/main/t"), ("flight sql", "\u0008\u0001\u0012\u0003abc")]:
    add("ticket", f"ticket {name}", "doget", IA, body=t, encoding="latin1")

out = {
    "comment": "Generated by gen_inputs.py; see its docstring. Edit the generator, not this file.",
    "fixture": {
        "project": "adv",
        "tables": {"t": "id int64 not null, name string, x float64: 20 rows, id = 0..19",
                   "u": "id string, z int32: 5 rows"},
        "branches": {"dev": "from main after both puts"},
        "run": {"recipe": R, "world_size": 2, "note": "resolved once: 5 steps"},
    },
    "inputs": INPUTS,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inputs.json")
with open(path, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, ensure_ascii=True)
    f.write("\n")
cats = {}
for i in INPUTS:
    cats[i["category"]] = cats.get(i["category"], 0) + 1
print(len(INPUTS), "inputs:", cats)
