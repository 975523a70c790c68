"""The adversarial suite through pyarrow.flight: the bad inputs of
testdata/adversarial/inputs.json (shared with the Go suite in
internal/adversarial), plus puts and tickets built here with pyarrow, sent
to ONE real flightd per store (fs and MinIO). After each input: the gRPC
code is the expected one, the message is at least 20 bytes (at most
1 KiB) and not a generic internal error, every object of the store has
the same SHA-256 as before, and the server still answers. At the end the
process is alive with no panic in its log. Counts per category and code
are printed (pytest -s shows them).

Tickets are signed (docs/flight.md "Tickets"): edited ones must fail the
signature check. To reach the payload decoders behind it, the suite signs
payloads itself with the store's key, read from the store as
docs/format.md "Auth objects" describes it (so the suite also checks that
the document is precise). The auth category runs against a second flightd
over the same store with --auth tokens, with tokens made by `flightd admin
token create`."""

import base64
import hashlib
import hmac
import json
import re
import signal
import struct
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.fs as pafs
import pytest

from conftest import REPO, Flightd, fs_store

INPUTS = json.loads((REPO / "testdata" / "adversarial" / "inputs.json").read_text())["inputs"]

# Inputs today's server gets wrong, by "category/name" (the Go suite's
# knownBugs): test_adversarial leaves them out, test_known_bugs runs them
# and fails until they are fixed.
KNOWN_BUGS = {}  # none today: GetSchema now checks run commands as GetFlightInfo does,
# and a refused recipe stores no run record (issue 11 item 6); those 14 inputs are ordinary rows.


T_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("x", pa.float64())])
U_SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("z", pa.int32())])


def t_rows(first, n):
    ids = list(range(first, first + n))
    return pa.table([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids]),
                     pa.array([None if i % 7 == 3 else i / 2 for i in ids], pa.float64())], schema=T_SCHEMA)


# ------------------------------------------------------------ store hashes


def fs_hashes(root):
    root = Path(root)
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] == ".weft-locks" or p.is_dir():
            continue  # lock stripes: empty files made on first use; directories are not objects
        out[str(rel)] = "symlink" if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def s3_hashes(s3, bucket):
    out = {}
    for info in s3.get_file_info(pafs.FileSelector(bucket, recursive=True)):
        if info.type == pafs.FileType.File:
            with s3.open_input_stream(info.path) as f:
                out[info.path] = hashlib.sha256(f.read()).hexdigest()
    return out


def diff(before, after):
    out = [f"added {k}" for k in after.keys() - before.keys()]
    out += [f"removed {k}" for k in before.keys() - after.keys()]
    out += [f"changed {k}" for k in before.keys() & after.keys() if before[k] != after[k]]
    return "; ".join(sorted(out))


# ------------------------------------------------------------ the fixture


class Adv:
    """One flightd over one store, with the suite's fixture (the same as
    the Go suite's): project adv, tables t (20 rows) and u (5 rows),
    branch dev, and a run of t (seed 1, batch 4, 5 steps) for 2 ranks."""

    def __init__(self, server, hashes):
        self.server, self.hashes = server, hashes
        self.client = server.client()
        c = self.client
        self.root = action(c, "create_project", {"project": "adv"})["commit"]
        put(c, ["adv", "main", "t"], t_rows(0, 20))
        self.head = put(c, ["adv", "main", "u"], pa.table({"id": ["a", "b", None, "d", "e"], "z": pa.array([1, None, 3, 4, 5], pa.int32())},
                                                           schema=U_SCHEMA))["commit"]
        action(c, "create_branch", {"project": "adv", "branch": "dev", "from": "main"})
        cmd = {"recipe": {"seed": 1, "batch_size": 4, "components": [{"project": "adv", "table": "t"}]}, "world_size": 2}
        info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()))
        rec = json.loads(info.app_metadata)
        assert rec["steps"] == 5
        self.run = rec["run"]
        self.rank_tickets = [ep.ticket.ticket for ep in info.endpoints]
        self.scan_ticket = c.get_flight_info(fl.FlightDescriptor.for_path("adv", "main", "t")).endpoints[0].ticket.ticket
        self.vars = {"commit": self.head, "commit8": self.head[:8], "root": self.root, "run": self.run, "run8": self.run[:8]}


def action(c, name, body):
    results = list(c.do_action(fl.Action(name, body if isinstance(body, bytes) else json.dumps(body).encode())))
    assert len(results) == 1
    return json.loads(results[0].body.to_pybytes())


def put(c, path, table, meta=None):
    writer, reader = c.do_put(fl.FlightDescriptor.for_path(*path), table.schema)
    with writer:
        for b in table.to_batches():
            if meta is None:
                writer.write_batch(b)
            else:
                writer.write_with_metadata(b, meta)
        writer.done_writing()
        res = reader.read()
    return json.loads(res.to_pybytes())


def flightd_admin(flightd_bin, store, *args):
    """`flightd admin ARGS` over store; returns its stdout."""
    out = subprocess.run([flightd_bin, "admin", *args, "--store", store.url, *store.args], capture_output=True, text=True, env=store.env)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


ROLES = {
    "admin": ["--global-admin"],
    "readA": ["--project", "adv", "--scope", "read"],
    "writeA": ["--project", "adv", "--scope", "write"],
    "readB": ["--project", "other", "--scope", "read"],
    "revoked": ["--project", "adv", "--scope", "admin"],
}


def bearer(secret):
    return fl.FlightCallOptions(headers=[(b"authorization", f"Bearer {secret}".encode())])


def setup_auth(a, flightd_bin, store, work):
    """The second flightd (--auth tokens) over the same store, its tokens
    (one revoked), and project other: table t, a run, a scan ticket."""
    a.secret = {r: flightd_admin(flightd_bin, store, "token", "create", "--name", "py-" + r, *flags) for r, flags in ROLES.items()}
    token_id = hashlib.sha256(a.secret["revoked"].encode()).hexdigest()[:12]
    flightd_admin(flightd_bin, store, "token", "revoke", token_id)
    a.auth_server = Flightd(flightd_bin, store, work / "auth", ("--row-group-rows", "8", "--auth", "tokens"))
    (work / "auth").mkdir()
    a.auth_server.start()
    c = a.auth_client = a.auth_server.client()
    adm = bearer(a.secret["admin"])
    list(c.do_action(fl.Action("create_project", b'{"project": "other"}'), options=adm))
    writer, reader = c.do_put(fl.FlightDescriptor.for_path("other", "main", "t"), T_SCHEMA, options=adm)
    with writer:
        writer.write_table(t_rows(0, 8))
        writer.done_writing()
        reader.read()
    cmd = {"recipe": {"seed": 2, "batch_size": 4, "components": [{"project": "other", "table": "t"}]}, "world_size": 2}
    info = c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()), adm)
    a.other_run, a.other_rank = json.loads(info.app_metadata)["run"], info.endpoints[1].ticket.ticket
    a.other_scan = c.get_flight_info(fl.FlightDescriptor.for_path("other", "main", "t"), adm).endpoints[0].ticket.ticket


@pytest.fixture(scope="module", params=["fs", "minio"])
def adv(request, flightd_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("adversarial")
    if request.param == "fs":
        store = fs_store(work / "store")
        hashes = lambda: fs_hashes(work / "store")  # noqa: E731

        def ticket_keys():
            return {p.name: p.read_bytes() for p in (work / "store" / "auth" / "ticket-keys").iterdir()}
    else:
        m = request.getfixturevalue("minio")
        bucket = m.new_bucket()
        store = m.store(bucket)
        hashes = lambda: s3_hashes(m.fs, bucket)  # noqa: E731

        def ticket_keys():
            out = {}
            for info in m.fs.get_file_info(pafs.FileSelector(f"{bucket}/auth/ticket-keys")):
                with m.fs.open_input_stream(info.path) as f:
                    out[info.base_name] = f.read()
            return out
    server = Flightd(flightd_bin, store, work, ("--row-group-rows", "8"))
    server.start()
    a = Adv(server, hashes)
    a.store = request.param
    a.key = newest_key(ticket_keys())
    setup_auth(a, flightd_bin, store, work)
    yield a
    a.client.close()
    a.auth_client.close()
    for srv in (server, a.auth_server):
        rc = srv.stop()
        assert rc in (0, None, -signal.SIGKILL), f"flightd exited with {rc}:\n{srv.log_text()[-5000:]}"


# ------------------------------------------------------------ inputs

TEMPLATE = re.compile(r"\{\{(rep:(\d+):(.*?)|commit8|commit|root|run8|run)\}\}")


def expand(s, vars):
    def sub(m):
        if m.group(1).startswith("rep:"):
            return m.group(3) * int(m.group(2))
        return vars[m.group(1)]
    return TEMPLATE.sub(sub, s)


def encode(s, encoding):
    return s.encode("latin-1") if encoding == "latin1" else s.encode("utf-8")


def drain(stream):
    for _ in stream:
        pass


def good_put(c, path):
    put(c, path, t_rows(100, 3))


def file_call(row, vars):
    """A function of the client that sends one row of inputs.json."""
    body = encode(expand(row["body"], vars), row.get("encoding")) if "body" in row else None
    path = [expand(p, vars) for p in row.get("path", [])]
    act = expand(row.get("action", ""), vars)
    return {
        "info": lambda c: c.get_flight_info(fl.FlightDescriptor.for_command(body)),
        "schema": lambda c: c.get_schema(fl.FlightDescriptor.for_command(body)),
        "info_path": lambda c: c.get_flight_info(fl.FlightDescriptor.for_path(*path)),
        "schema_path": lambda c: c.get_schema(fl.FlightDescriptor.for_path(*path)),
        "action": lambda c: drain(c.do_action(fl.Action(act, body))),
        "list_flights": lambda c: drain(c.list_flights(body)),
        "put_path": lambda c: good_put(c, path),
        "doget": lambda c: c.do_get(fl.Ticket(body)).read_all(),
    }[row["call"]]


SIG = 36  # key id (4 bytes) + HMAC-SHA256 (32 bytes)


def newest_key(objects):
    """The key servers sign with, from the objects auth/ticket-keys/ID
    (docs/format.md "Auth objects"): ID the key number as 10 digits, JSON
    {"format": 1, "id", "alg": "HMAC-SHA256", "secret": base64 of 32 bytes,
    "created"}; servers sign with the highest id."""
    name = max(objects)
    assert re.fullmatch(r"\d{10}", name), name
    k = json.loads(objects[name])
    assert k["format"] == 1 and k["alg"] == "HMAC-SHA256" and k["id"] == int(name), k
    secret = base64.b64decode(k["secret"])
    assert len(secret) == 32
    return k["id"], secret


def sign(key, body):
    """body || KID || HMAC-SHA256(secret, "weft-ticket:1" || KID || body)."""
    kid, secret = key
    kb = struct.pack(">I", kid)
    return body + kb + hmac.new(secret, b"weft-ticket:1" + kb + body, hashlib.sha256).digest()


def payload(ticket):
    return json.loads(ticket[6:-SIG])


def _edit(ticket, changes):
    p = payload(ticket)
    for k, v in changes.items():
        if v is DELETE:
            p.pop(k, None)
        else:
            p[k] = v
    return ticket[:6] + json.dumps(p).encode()


def edited(ticket, **changes):
    """The payload edited, the old signature kept: what a client can make."""
    return _edit(ticket, changes) + ticket[-SIG:]


def signed(a, ticket, **changes):
    """The payload edited and signed with the store's key: what only a
    server could make, to reach the decoders behind the signature."""
    return sign(a.key, _edit(ticket, changes))


def minted(a, version, kind, body):
    return sign(a.key, b"weft" + bytes([version, kind]) + body)


DELETE = object()


def py_inputs():
    """Inputs built with pyarrow: (category, name, code, fn(client, adv))."""
    out = []

    def get(name, code, ticket):
        out.append(("ticket", "py " + name, code, lambda c, a: c.do_get(fl.Ticket(ticket(a))).read_all()))

    for kind, real in [("scan", lambda a: a.scan_ticket), ("rank", lambda a: a.rank_tickets[0])]:
        body = lambda a, real=real: real(a)[6:-SIG]  # noqa: E731
        for cut in (2, 5, 10, 30, 36, 40):
            get(f"{kind} cut by {cut}", "InvalidArgument", lambda a, real=real, cut=cut: real(a)[:-cut])
        for pos in (1, 3, 7, 12, -40, -34, -2, -5, -12):
            get(f"{kind} byte {pos} xor 0x80", "InvalidArgument",
                lambda a, real=real, pos=pos: real(a)[:pos] + bytes([real(a)[pos] ^ 0x80]) + (real(a)[pos + 1:] if pos != -1 else b""))
        get(f"{kind} reversed", "InvalidArgument", lambda a, real=real: real(a)[::-1])
        get(f"{kind} upper-cased", "InvalidArgument", lambda a, real=real: real(a).upper())
        get(f"{kind} in base64", "InvalidArgument", lambda a, real=real: base64.b64encode(real(a)))
        get(f"{kind} payload in utf-16, old signature", "InvalidArgument",
            lambda a, real=real, body=body: real(a)[:6] + body(a).decode().encode("utf-16") + real(a)[-SIG:])
        get(f"{kind} version 1 (checksummed, unsigned)", "InvalidArgument",
            lambda a, real=real, body=body: (lambda t: t + hashlib.sha256(t).digest()[:8])(b"weft\x01" + real(a)[5:6] + body(a)))
        get(f"{kind} forged with another key", "InvalidArgument", lambda a, real=real: sign((a.key[0], b"k" * 32), real(a)[:-SIG]))
        get(f"{kind} forged under key id 7", "InvalidArgument", lambda a, real=real: sign((7, a.key[1]), real(a)[:-SIG]))
        get(f"{kind} sha256 instead of the hmac", "InvalidArgument",
            lambda a, real=real: real(a)[:-32] + hashlib.sha256(b"weft-ticket:1" + real(a)[-SIG:-32] + real(a)[:-SIG]).digest())
        get(f"{kind} edited project nope", "InvalidArgument", lambda a, real=real: edited(real(a), p="nope"))
        get(f"{kind} edited, a space added", "InvalidArgument", lambda a, real=real: real(a)[:6] + b" " + real(a)[6:])
        get(f"{kind} signed payload in utf-16", "InvalidArgument",
            lambda a, real=real, body=body: minted(a, 2, real(a)[5], body(a).decode().encode("utf-16")))
        get(f"{kind} signed with a BOM", "InvalidArgument", lambda a, real=real, body=body: minted(a, 2, real(a)[5], b"\xef\xbb\xbf" + body(a)))
        get(f"{kind} signed with invalid utf-8", "InvalidArgument",
            lambda a, real=real, body=body: minted(a, 2, real(a)[5], body(a).replace(b'"adv"', b'"ad\xffv"')))
        get(f"{kind} signed version 1", "InvalidArgument", lambda a, real=real, body=body: minted(a, 1, real(a)[5], body(a)))
        get(f"{kind} signed kind 9", "InvalidArgument", lambda a, body=body: minted(a, 2, 9, body(a)))
    get("scan signed columns = every reserved", "InvalidArgument", lambda a: signed(a, a.scan_ticket, cols=["_row", "_component"]))
    get("scan signed columns duplicated", "InvalidArgument", lambda a: signed(a, a.scan_ticket, cols=["id", "id"]))
    get("scan signed blocks 2^63", "InvalidArgument", lambda a: signed(a, a.scan_ticket, b1=2**63))
    get("scan signed blocks 2^64", "InvalidArgument", lambda a: signed(a, a.scan_ticket, b1=2**64))
    get("scan signed rows 1e3", "InvalidArgument", lambda a: minted(a, 2, 1, a.scan_ticket[6:-SIG].replace(b'"n":20', b'"n":1e3')))
    get("scan signed no table", "InvalidArgument", lambda a: signed(a, a.scan_ticket, t=DELETE))
    get("scan signed no first block", "InvalidArgument", lambda a: signed(a, a.scan_ticket, b0=DELETE))
    get("scan signed no rows", "InvalidArgument", lambda a: signed(a, a.scan_ticket, n=DELETE))
    get("scan signed table is hex", "InvalidArgument", lambda a: signed(a, a.scan_ticket, t="deadbeef"))
    get("scan signed commit of run", "NotFound", lambda a: signed(a, a.scan_ticket, c=a.run))
    get("rank signed world 1 rank 0 of run with batch 4 (steps past)", "InvalidArgument",
        lambda a: signed(a, a.rank_tickets[0], w=1, r=0, s0=0, s1=6))
    get("rank signed steps 2^63", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], s1=2**63))
    get("rank signed run of commit", "NotFound", lambda a: signed(a, a.rank_tickets[0], run=a.head))
    get("rank signed project is hex", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], p="deadbeef"))
    get("rank signed no rank", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], r=DELETE))
    get("rank signed no world", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], w=DELETE))
    get("rank signed no start step", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], s0=DELETE))
    get("rank signed no end step", "InvalidArgument", lambda a: signed(a, a.rank_tickets[0], s1=DELETE))
    # Not here: a rank ticket signed naming "p": "nope" streams adv's run
    # (the project is a hint to the run lookup); only a server can sign.

    def bad_put(name, table, path=("adv", "main", "t"), code="InvalidArgument"):
        out.append(("put", "py " + name, code, lambda c, a: put(c, list(path), table() if callable(table) else table)))

    # What polars, pandas and friends write, that the store cannot give back.
    for tname, typ, vals in [
        ("large_list<large_string> (polars list[str])", pa.large_list(pa.large_string()), [["a"], None]),
        ("large_string (polars str)", None, None),
        ("date64", pa.date64(), [0, 86400000]),
        ("time32[s]", pa.time32("s"), [0, 1]),
        ("timestamp[s]", pa.timestamp("s"), [0, 1]),
        ("duration[us]", pa.duration("us"), [0, 1]),
        ("month_day_nano_interval", pa.month_day_nano_interval(), [(1, 2, 3), None]),
        ("string_view", pa.string_view(), ["a", "b"]),
        ("binary_view", pa.binary_view(), [b"a", b"b"]),
        ("list_view", pa.list_view(pa.int32()), [[1], []]),
        ("large_list<int32>", pa.large_list(pa.int32()), [[1], None]),
        ("dictionary<int32, large_string>", pa.dictionary(pa.int32(), pa.large_string()), ["a", "b"]),
        ("dictionary<int8, int64>", pa.dictionary(pa.int8(), pa.int64()), [1, 2]),
        ("sparse union", pa.sparse_union([pa.field("i", pa.int32())]), None),
        ("run_end_encoded", pa.run_end_encoded(pa.int32(), pa.string()), None),
        ("json extension", getattr(pa, "json_", lambda: None)(), ['{"a": 1}', "[]"]),
        ("bool8 extension", getattr(pa, "bool8", lambda: None)(), [1, 0]),
        ("opaque extension", getattr(pa, "opaque", lambda *a: None)(pa.binary(), "geometry", "postgis"), [b"a", b"b"]),
        ("struct<d date64>", pa.struct([("d", pa.date64())]), [{"d": 0}, None]),
        ("empty struct", pa.struct([]), [{}, {}]),
    ]:
        if typ is None:
            continue  # large_string is accepted: listed for the record

        def table(typ=typ, vals=vals):
            if vals is None and pa.types.is_union(typ):
                arr = pa.UnionArray.from_sparse(pa.array([0, 0], pa.int8()), [pa.array([1, 2], pa.int32())], ["i"])
            elif vals is None:
                arr = pa.array(["a", "a"]).cast(typ) if not pa.types.is_run_end_encoded(typ) else \
                    pa.RunEndEncodedArray.from_arrays(pa.array([2], pa.int32()), pa.array(["a"]))
            elif isinstance(typ, pa.BaseExtensionType):
                arr = pa.ExtensionArray.from_storage(typ, pa.array(vals, typ.storage_type))
            else:
                arr = pa.array(vals, typ)
            return pa.table({"id": pa.array([0, 1], pa.int64()), "c": arr})
        bad_put(f"refused type {tname}", table, ("adv", "main", "typed"))

    def dict_out_of_range(index_type, indices):
        def table():
            d = pa.DictionaryArray.from_arrays(pa.array(indices, index_type), pa.array(["a", "b"]), safe=False)
            return pa.table({"id": pa.array(range(len(indices)), pa.int64()), "d": d})
        return table

    bad_put("dictionary index past the end", dict_out_of_range(pa.int32(), [0, 1, 2]), ("adv", "main", "dict"))
    bad_put("dictionary negative index", dict_out_of_range(pa.int16(), [0, -5, 1]), ("adv", "main", "dict"))
    bad_put("dictionary uint32 max index", dict_out_of_range(pa.uint32(), [0, 2**32 - 1]), ("adv", "main", "dict"))
    bad_put("schema: id nullable with a null", pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", "b"], "x": [1.0, 2.0]}))
    bad_put("schema: x as int64", pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "x": pa.array([1], pa.int64())}))
    bad_put("schema: name as binary", pa.table({"id": pa.array([1], pa.int64()), "name": [b"a"], "x": [1.0]}))
    bad_put("schema: extra metadata column", pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "x": [1.0], "__index_level_0__": [0]}))
    bad_put("schema: only id", pa.table({"id": pa.array([1], pa.int64())}))
    bad_put("schema: 1000 columns", pa.table({f"c{i}": [i] for i in range(1000)}))
    bad_put("schema: 64 KiB column name", pa.table({"c" * 65536: [1]}))
    bad_put("no rows", t_rows(0, 0))
    bad_put("no rows, new table", t_rows(0, 0), ("adv", "main", "fresh"))
    out.append(("put", "py commit id as branch", "InvalidArgument", lambda c, a: put(c, ["adv", a.head, "t"], t_rows(100, 1))))
    out.append(("put", "py commit prefix 10 as branch", "InvalidArgument", lambda c, a: put(c, ["adv", a.head[:10], "t"], t_rows(100, 1))))
    out.append(("put", "py run id as branch", "InvalidArgument", lambda c, a: put(c, ["adv", a.run, "t"], t_rows(100, 1))))
    out.append(("put", "py command descriptor", "InvalidArgument", lambda c, a: _put_desc(c, fl.FlightDescriptor.for_command(b'{"project": "adv"}'))))
    return out + proto_inputs() + idem_inputs() + auth_inputs()


def proto_inputs():
    """Flight protobuf strings that are not UTF-8 (pyarrow's C++ protobuf
    sends them; grpc-go used to answer Internal before any handler)."""
    out = []

    def add(name, fn):
        out.append(("proto", "py " + name, "InvalidArgument", fn))

    for bname, bad in [("0xff", b"ad\xffv"), ("overlong", b"ma\xc0\x80in"), ("surrogate", b"\xed\xa0\x80"), ("latin-1", b"caf\xe9"),
                       ("cut multibyte", b"adv\xe2\x82")]:
        add(f"info path element {bname}", lambda c, a, bad=bad: c.get_flight_info(fl.FlightDescriptor.for_path(b"adv", bad, b"t")))
    add("schema path element 0xff", lambda c, a: c.get_schema(fl.FlightDescriptor.for_path(b"ad\xffv", b"main", b"t")))
    add("put path element 0xc0", lambda c, a: put(c, [b"adv", b"ma\xc0in", b"t"], t_rows(100, 1)))
    add("put path element surrogate", lambda c, a: put(c, [b"\xed\xa0\x80", b"main", b"t"], t_rows(100, 1)))
    add("action type 0xff", lambda c, a: drain(c.do_action(fl.Action(b"log\xff", b"{}"))))
    add("action type latin-1", lambda c, a: drain(c.do_action(fl.Action(b"cr\xe9ate_branch", b"{}"))))
    return out


IDEM_KEY = "py-idem-5d0a9e7c-2f41-4d8b-8c0e-7b3a1f6e9d24"


def idem_inputs():
    """DoPut's app_metadata {"idempotency_key"}: malformed ones refused,
    one valid key committed once and then replayed, reused elsewhere refused."""
    out = []
    for name, meta in [
        ("not json", b'{idempotency_key: "k"}'), ("json cut short", b'{"idempotency_key": "k"'), ("a list", b"[]"),
        ("null", b"null"), ("a number", b"1"), ("key null", b'{"idempotency_key": null}'), ("key a number", b'{"idempotency_key": 1}'),
        ("key empty", b'{"idempotency_key": ""}'), ("key 257 characters", b'{"idempotency_key": "' + b"k" * 257 + b'"}'),
        ("key with a space", b'{"idempotency_key": "a b"}'), ("key with a newline", b'{"idempotency_key": "a\\nb"}'),
        ("key with NUL", b'{"idempotency_key": "a\\u0000b"}'), ("key with DEL", b'{"idempotency_key": "a\x7fb"}'),
        ("key with \u00e9", '{"idempotency_key": "cl\u00e9"}'.encode()), ("key with invalid utf-8", b'{"idempotency_key": "k\xff"}'),
        ("unknown field", b'{"idempotency_key": "k", "x": 1}'), ("trailing data", b'{"idempotency_key": "k"} {}'),
        ("binary", b"\x00\xff\x10\x80"),
    ]:
        out.append(("idem", "py metadata " + name, "InvalidArgument",
                    lambda c, a, meta=meta: put(c, ["adv", "main", "idem"], t_rows(100, 3), pa.py_buffer(meta))))

    def key_put(c, path, rows):
        return put(c, path, rows, pa.py_buffer(json.dumps({"idempotency_key": IDEM_KEY}).encode()))

    def first(c, a):
        res = key_put(c, ["adv", "main", "idem"], t_rows(100, 3))
        assert not res.get("replayed") and res["rows"] == 3, f"the first put with a key answered {res}"
        a.idem_commit = res["commit"]

    def again(rows):
        def fn(c, a):
            res = key_put(c, ["adv", "main", "idem"], rows)
            assert res == {"commit": a.idem_commit, "rows": 3, "replayed": True}, f"a put with a committed key answered {res}"
        return fn

    out.append(("idem", "py valid key: commits", "OK+commit", first))
    out.append(("idem", "py valid key again: replayed", "OK", again(t_rows(100, 3))))
    out.append(("idem", "py valid key again, other rows: replayed", "OK", again(t_rows(300, 7))))
    out.append(("idem", "py valid key on another table", "InvalidArgument", lambda c, a: key_put(c, ["adv", "main", "t"], t_rows(100, 3))))
    out.append(("idem", "py valid key on another branch", "InvalidArgument", lambda c, a: key_put(c, ["adv", "dev", "idem"], t_rows(100, 3))))
    return out


def auth_inputs():
    """Calls to the --auth tokens server (docs/flight.md "Security")."""
    out = []

    def opts(a, who):
        if isinstance(who, list):
            return fl.FlightCallOptions(headers=[(b"authorization", v(a) if callable(v) else v) for v in who])
        return fl.FlightCallOptions() if who == "none" else bearer(a.secret[who])

    def add(name, code, who, call):
        out.append(("auth", "py " + name, code, lambda c, a: call(a.auth_client, opts(a, who), a)))

    def act(name, body):
        return lambda c, o, a: drain(c.do_action(fl.Action(name, json.dumps(body).encode()), options=o))

    def put_to(*path):
        def fn(c, o, a):
            writer, reader = c.do_put(fl.FlightDescriptor.for_path(*path), T_SCHEMA, options=o)
            with writer:
                writer.write_table(t_rows(100, 2))
                writer.done_writing()
                reader.read()
        return fn

    def run_by_id(run):
        return lambda c, o, a: c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps({"run": run(a), "world_size": 1}).encode()), o)

    def recipe(*projects):
        cmd = {"recipe": {"seed": 9, "batch_size": 4, "components": [{"project": p, "table": "t"} for p in projects]}, "world_size": 1}
        return lambda c, o, a: c.get_flight_info(fl.FlightDescriptor.for_command(json.dumps(cmd).encode()), o)

    calls = {
        "list_branches": act("list_branches", {"project": "adv"}),
        "scan": lambda c, o, a: c.get_flight_info(fl.FlightDescriptor.for_path("adv", "main", "t"), o),
        "GetSchema": lambda c, o, a: c.get_schema(fl.FlightDescriptor.for_path("adv", "main", "t"), o),
        "run by id": run_by_id(lambda a: a.run),
        "DoGet": lambda c, o, a: c.do_get(fl.Ticket(a.scan_ticket), o).read_all(),
        "DoPut": put_to("adv", "main", "t"),
        "create_project": act("create_project", {"project": "fresh"}),
        "ListFlights": lambda c, o, a: drain(c.list_flights(b"", o)),
        "ListActions": lambda c, o, a: c.list_actions(o),
    }
    for name, call in calls.items():
        add(f"no token: {name}", "Unauthenticated", "none", call)
        add(f"revoked token: {name}", "Unauthenticated", "revoked", call)
    for hname, headers in [
        ("unknown well-formed token", [b"Bearer weft_" + b"A" * 43]),
        ("token one character short", [lambda a: ("Bearer " + a.secret["admin"][:-1]).encode()]),
        ("secret without scheme", [lambda a: a.secret["admin"].encode()]),
        ("scheme only", [b"Bearer"]),
        ("basic auth", [b"Basic YWRtaW46YWRtaW4="]),
        ("4 KiB of garbage", [b"Bearer " + b"x" * 4096]),
        ("two headers, both valid", [lambda a: ("Bearer " + a.secret["admin"]).encode()] * 2),
        ("two headers, valid then bad", [lambda a: ("Bearer " + a.secret["admin"]).encode(), b"Bearer nope"]),
    ]:
        add(f"header {hname}: list_branches", "Unauthenticated", headers, calls["list_branches"])
        add(f"header {hname}: DoPut", "Unauthenticated", headers, calls["DoPut"])
    add("read token: DoPut", "PermissionDenied", "readA", calls["DoPut"])
    add("read token: create_branch", "PermissionDenied", "readA", act("create_branch", {"project": "adv", "branch": "x", "from": "main"}))
    add("read token: create_project", "PermissionDenied", "readA", calls["create_project"])
    add("write token: create_project", "PermissionDenied", "writeA", calls["create_project"])
    for role in ("readA", "writeA"):
        add(f"{role} on other: list_branches", "PermissionDenied", role, act("list_branches", {"project": "other"}))
        add(f"{role} on other: scan", "PermissionDenied", role, lambda c, o, a: c.get_flight_info(fl.FlightDescriptor.for_path("other", "main", "t"), o))
        add(f"{role} on other: DoGet scan ticket", "PermissionDenied", role, lambda c, o, a: c.do_get(fl.Ticket(a.other_scan), o).read_all())
        add(f"{role} on other: DoGet rank ticket", "PermissionDenied", role, lambda c, o, a: c.do_get(fl.Ticket(a.other_rank), o).read_all())
        add(f"{role} on other: run by id", "NotFound", role, run_by_id(lambda a: a.other_run))
        add(f"{role} on other: run by prefix", "NotFound", role, run_by_id(lambda a: a.other_run[:8]))
        add(f"{role} on other: recipe", "PermissionDenied", role, recipe("other"))
        add(f"{role} on other: recipe over both", "PermissionDenied", role, recipe("adv", "other"))
        add(f"{role} on other: ListFlights", "PermissionDenied", role, lambda c, o, a: drain(c.list_flights(b"other", o)))
        add(f"{role} on other: DoPut", "PermissionDenied", role, put_to("other", "main", "t"))
    add("readB on adv: DoGet rank ticket", "PermissionDenied", "readB", lambda c, o, a: c.do_get(fl.Ticket(a.rank_tickets[0]), o).read_all())
    add("readB on adv: run by id", "NotFound", "readB", run_by_id(lambda a: a.run))
    add("readA: adv scan ticket edited to other", "InvalidArgument", "readA",
        lambda c, o, a: c.do_get(fl.Ticket(edited(a.scan_ticket, p="other")), o).read_all())
    return out


def _put_desc(c, desc):
    writer, reader = c.do_put(desc, T_SCHEMA)
    with writer:
        writer.write_table(t_rows(100, 2))
        writer.done_writing()
        reader.read()


def all_inputs():
    rows = [(r["category"], r["name"], r["code"], (lambda r: lambda c, a: file_call(r, a.vars)(c))(r)) for r in INPUTS]
    return rows + py_inputs()


# ------------------------------------------------------------ checking

CODE_NAMES = {
    "invalid argument": "InvalidArgument", "not found": "NotFound", "already exists": "AlreadyExists",
    "unimplemented": "Unimplemented", "aborted": "Aborted", "internal": "Internal", "unknown": "Unknown",
    "failed precondition": "FailedPrecondition", "resource exhausted": "ResourceExhausted",
    "unauthenticated": "Unauthenticated", "permission denied": "PermissionDenied", "unauthorized": "PermissionDenied",
    "unavailable": "Unavailable",
}
FLIGHT_RE = re.compile(r"Flight returned (.+?) error, with message: (.*?)(?:\. gRPC client debug context:|\. Detail:|$)", re.S)


def code_and_message(exc):
    """The gRPC code and the server's message from a pyarrow exception."""
    text = str(exc)
    m = FLIGHT_RE.search(text)
    if m:
        return CODE_NAMES.get(m.group(1), m.group(1)), m.group(2)
    # pyarrow maps some codes to plain Arrow errors: the text is then
    # "<message>. Detail: ..." with the status code in the detail.
    if isinstance(exc, pa.ArrowInvalid):
        return "InvalidArgument", text.split(". Detail:")[0]
    if isinstance(exc, pa.ArrowKeyError):
        return "NotFound", text.split(". Detail:")[0]
    if isinstance(exc, pa.ArrowNotImplementedError):
        return "Unimplemented", text.split(". Detail:")[0]
    return type(exc).__name__, text


def run_one(a, category, name, code, fn, before, counts):
    """Sends one input; returns (failures, the store after). code "OK":
    the call must succeed and change nothing; "OK+commit": succeed and
    commit."""
    problems = []
    try:
        fn(a.client, a)
        got, msg = "OK", ""
        if not code.startswith("OK"):
            problems.append(f"the call succeeded; want {code}")
    except Exception as exc:  # noqa: BLE001 (any error is an answer to check)
        got, msg = code_and_message(exc)
        if got != code:
            problems.append(f"code {got}, want {code}: {msg[:300]}")
        elif len(msg) < 20:
            problems.append(f"message {msg!r} is shorter than 20 bytes")
        if "internal server error" in msg.lower():
            problems.append(f"a generic internal error: {msg[:300]}")
    counts[category][got] += 1
    after = a.hashes()
    d = diff(before, after)
    if code == "OK+commit":
        if not d:
            problems.append("the put committed nothing")
    elif d:
        problems.append(f"the store changed: {d}")
    try:
        action(a.client, "list_branches", {"project": "adv"})
        list(a.auth_client.do_action(fl.Action("list_branches", b'{"project": "adv"}'), options=bearer(a.secret["readA"])))
    except Exception as exc:  # noqa: BLE001
        problems.append(f"the server no longer answers: {exc}")
    for srv in (a.server, a.auth_server):
        if srv.proc.poll() is not None:
            problems.append("flightd died")
    return [f"{category}/{name}: {p}" for p in problems], after


def print_counts(a, counts, n):
    total = Counter()
    lines = [f"\nadversarial (pyarrow.flight) on {a.store}: {n} inputs"]
    for cat in sorted(counts):
        total.update(counts[cat])
        lines.append(f"  {cat:8} {sum(counts[cat].values()):4} tried: " + " ".join(f"{k}={v}" for k, v in sorted(counts[cat].items())))
    lines.append("  total    " + f"{sum(total.values()):4} tried: " + " ".join(f"{k}={v}" for k, v in sorted(total.items())))
    print("\n".join(lines))


def test_adversarial(adv):
    inputs = [i for i in all_inputs() if f"{i[0]}/{i[1]}" not in KNOWN_BUGS]
    assert len(inputs) >= 300
    counts = defaultdict(Counter)
    failures = []
    state = adv.hashes()
    for category, name, code, fn in inputs:
        problems, state = run_one(adv, category, name, code, fn, state, counts)
        failures += problems
        if adv.server.proc.poll() is not None:
            break
    print_counts(adv, counts, len(inputs))
    for srv in (adv.server, adv.auth_server):
        assert srv.proc.poll() is None, "flightd died:\n" + srv.log_text()[-5000:]
        assert "panic" not in srv.log_text().lower(), "a panic in the server log"
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:100])


def test_known_bugs(adv):
    """The inputs of KNOWN_BUGS, expecting the right answer: fails until they are fixed."""
    inputs = [i for i in all_inputs() if f"{i[0]}/{i[1]}" in KNOWN_BUGS]
    assert len(inputs) == len(KNOWN_BUGS), "a KNOWN_BUGS name matches no input"
    counts = defaultdict(Counter)
    failures = []
    state = adv.hashes()
    for category, name, code, fn in inputs:
        problems, state = run_one(adv, category, name, code, fn, state, counts)
        failures += [f"{p} (known bug: {KNOWN_BUGS[category + '/' + name]})" for p in problems]
    assert not failures, f"{len(failures)} known bugs still there:\n" + "\n".join(failures)


def test_ticket_signature_matches_format_md(adv):
    """Signing a real ticket's body with the key as docs/format.md
    describes gives the server's ticket, byte for byte."""
    for t in (adv.scan_ticket, *adv.rank_tickets):
        assert sign(adv.key, t[:-SIG]) == t
