"""results.json → results.md and PNG plots (matplotlib)."""

import statistics
from pathlib import Path

WEFT = "weft-fs"
WEFT_SHM = "weft-fs-shm"
SHORT = {"weft-fs": "Weft fs", "weft-minio": "Weft MinIO", "weft-fs-shm": "Weft fs, host slots",
         "weft-minio-shm": "Weft MinIO, host slots"}


def med(runs, key, sub=None):
    vals = []
    for r in runs:
        if "error" in r:
            continue
        v = r.get(key) if sub is None else (r.get(key) or {}).get(sub)
        if isinstance(v, (int, float)):
            vals.append(v)
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def fmt(t, unit="", digits=0, scale=1.0):
    if t is None:
        return "—"
    m, lo, hi = (x * scale for x in t)
    f = f"{{:,.{digits}f}}"
    return f"{f.format(m)}{unit} [{f.format(lo)}–{f.format(hi)}]"


def secs(t):
    if t is None:
        return "—"
    m, lo, hi = t
    if m < 1:
        return f"{m * 1e3:,.0f} ms [{lo * 1e3:,.0f}–{hi * 1e3:,.0f}]"
    return f"{m:,.2f} s [{lo:,.2f}–{hi:,.2f}]"


def mib(v):
    return "—" if v is None else f"{v / 2**20:,.0f} MiB"


def loader_rows(res, wname):
    w = res["workloads"][wname]
    rows = []
    for name, lr in w["loaders"].items():
        runs = lr.get("runs", [])
        good = [r for r in runs if "error" not in r]
        row = {"name": name, "title": res["loaders"][name]["title"], "error": lr.get("error"),
               "sps": med(runs, "samples_per_s"), "mbps": med(runs, "mb_per_s"),
               "ttfb": med(runs, "first_batch_s"), "resume": med(runs, "resume", "secs"),
               "resume_kind": sorted({(r.get("resume") or {}).get("kind", "?") for r in good}),
               "resume_err": next(((r.get("resume") or {}).get("error") for r in good
                                   if (r.get("resume") or {}).get("kind") == "error"), None),
               "rss": max((r.get("rss_after_throughput") or r["trainer_rss"] or 0 for r in good), default=None),
               "short_values": sum(r.get("short_values", 0) for r in good),
               "workers_rss": max((r.get("workers_rss_max", 0) for r in good), default=0),
               "server_rss": {}, "identity": lr.get("identity"), "failed_runs": len(runs) - len(good),
               "cpu_trainer": med(good, "cpu", "trainer_us_per_sample"),
               "cpu_servers": med(good, "cpu", "servers_us_per_sample"),
               "cpu_total": med([{"t": r["cpu"]["trainer_us_per_sample"] + r["cpu"]["servers_us_per_sample"]}
                                 for r in good if r.get("cpu")], "t"),
               "w4": med(lr.get("w4") or [], "samples_per_s"),
               "w4_cpu": med(lr.get("w4") or [], "cpu_us_per_sample"),
               "w4_err": next((r["error"] for r in lr.get("w4") or [] if "error" in r), None)}
        for r in good:
            for k, v in (r.get("server_rss") or {}).items():
                row["server_rss"][k] = max(row["server_rss"].get(k, 0), v)
        rows.append(row)
    return rows


def limit_rows(res, wname):
    lim = res["workloads"][wname]["limits"]
    out = []
    names = {"iperf3": "iperf3, loopback, 1 stream (bytes, no samples)",
             "flight_ceiling": "arrow-go Flight resending one prebuilt batch of B rows",
             "decode": "arrow-go pqarrow sequential decode of the same Parquet files",
             "memcpy": "memcpy, one core (numpy copy of 256 MiB; bytes, no samples)"}
    for k, runs in lim.items():
        good = [r for r in runs if "error" not in r]
        out.append({"name": names.get(k, k), "key": k, "sps": med(good, "rows_per_s") if k not in ("iperf3", "memcpy") else None,
                    "mbps": med(good, "mb_per_s"),
                    "error": None if good else next((r["error"] for r in runs if "error" in r), "no run"),
                    "failed": len(runs) - len(good)})
    return out


def cpu(r):
    if not r.get("cpu_total"):
        return "—"
    return (f"{r['cpu_total'][0]:,.1f} ({r['cpu_trainer'][0]:,.1f} + {r['cpu_servers'][0]:,.1f})"
            if r["cpu_servers"] and r["cpu_servers"][0] > 0 else f"{r['cpu_total'][0]:,.1f}")


def goals14(res):
    """Issue 14's goals, computed from the tables: Weft with host slots
    against Lance (small rows) and LitData (large rows), W = 1 and W = 4."""
    out = []
    for wname, peer in (("small", "lance"), ("large", "litdata")):
        if wname not in res["workloads"]:
            continue
        by = {r["name"]: r for r in loader_rows(res, wname)}
        shm, other = by.get(WEFT_SHM), by.get(peer)
        if not (shm and shm["sps"] and other and other["sps"]):
            out.append(f"- {wname}: no comparison (Weft host slots or {peer} has no figures; see the table).")
            continue
        x = shm["sps"][0] / other["sps"][0]
        out.append(f"- {wname}: Weft with host slots (fs) {shm['sps'][0]:,.0f} samples/s is **{x:.2f}×** "
                   f"{other['title']} ({other['sps'][0]:,.0f}); goal ≥ 1.0×: **{'met' if x >= 1 else 'not met'}**. "
                   f"CPU per sample: Weft {cpu(shm)} µs, {other['title']} {cpu(other)} µs.")
        if shm["w4"]:
            peers4 = [r for n, r in by.items() if not n.startswith("weft") and r["w4"]]
            for r in peers4:
                y = shm["w4"][0] / r["w4"][0]
                out.append(f"  - W = 4: Weft host slots {shm['w4'][0]:,.0f} samples/s in all is **{y:.2f}×** "
                           f"{r['title']} ({r['w4'][0]:,.0f}); goal ≥ 2×: **{'met' if y >= 2 else 'not met'}**.")
        if shm["resume"]:
            ms = shm["resume"][0] * 1e3
            out.append(f"  - resume at step {res['resume_step']:,} on host slots: {ms:,.0f} ms median; goal < 100 ms: "
                       f"**{'met' if ms < 100 else 'not met'}**.")
    return out


def ident(i):
    if not i:
        return "—"
    if i.get("identical") is None:
        return f"error: {i.get('error', '?')[:80]}"
    s = "**yes**" if i["identical"] else "no"
    return f"{s} ({i['steps_same_samples']}/{i['steps']} steps same samples, {i['steps_same_order']} same order)"


def write(res, out):
    out = Path(out)
    plots = plot(res, out)
    m = res["machine"]
    L = []
    p = L.append
    quick = res["mode"] == "quick"
    p("# Loader benchmark: Weft against peers and limits\n")
    p("Generated by `bench/harness` (`make bench`); do not edit by hand — edit the harness. "
      "Raw figures: [results.json](results.json).\n")
    if quick:
        from .loaders.hf import BUFFER, QUICK_BUFFER

        p("> **QUICK MODE** — the data is scaled down (see Workloads) so the whole run finishes in a few "
          "minutes; `make bench-full` runs the issue's scale. Figures from quick mode are indicative only. "
          f"Quick mode also gives Hugging Face datasets a shuffle buffer of {QUICK_BUFFER:,} rows instead of "
          f"{BUFFER:,} (at {BUFFER:,} the buffer would hold the whole large workload, so its first batch would "
          "read all of it and the timed steps would only drain the buffer).\n")
    p(f"- Date: {res['date']}; {res['runs']} runs per loader (each in a fresh process), round-robin; "
      f"every figure is the median [min–max] of the runs.")
    p(f"- Machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_bytes'] / 2**30:.1f} GiB memory, "
      f"Linux {m['kernel']}, Python {m['python']}; no GPU. Loaders, servers and limits share the CPUs.")
    v = res["versions"]
    p("- Versions: " + ", ".join(f"{k} {val if isinstance(val, str) else (val[0] if val else '—')}"
                                for k, val in v.items()) + "\n")
    p("## Workloads\n")
    for wname, w in res["workloads"].items():
        s = w["spec"]
        if wname == "small":
            what = "`id int64, features fixed_size_list<float32>[32], label int64` (144 B/row)"
        else:
            what = "`id int64, image binary` (100 KiB random bytes per row)"
        p(f"- **{wname}**: tables a and b of {what}, {s['rows'][0]:,} + {s['rows'][1]:,} rows "
          f"({w.get('parquet_bytes', 0) / 1e6:,.0f} MB of Parquet), mixed {s['weights'][0]}/{s['weights'][1]}, "
          f"B = {s['batch_size']}, seed {s['seed']}; {max(res['scale'][wname]['warmup'], res['ids_steps'])} warm-up "
          f"steps (the first {res['ids_steps']} recorded for the W1 = W2 check; the rest cut short after "
          f"{res['scale']['max_secs'] / 2:g} s), then "
          f"{res['scale'][wname]['measure']} timed steps (cut short after {res['scale']['max_secs']} s, at least "
          f"{res['scale']['min_steps']} steps: slow loaders time fewer; results.json has the count).")
    p("")
    p("What is measured, in the trainer process (the worker): **samples/s** and **MB/s** of the data tensors "
      "delivered (small: `id` int64, `features` float32 [B,32], `label` int64; large: `id` int64 and `image` "
      "as one uint8 tensor [B, 102400] per batch — every loader pays the same one copy from bytes into it; "
      "Weft's extra `_component`/`_row` are not counted); **first batch**: loader construction to the first "
      f"batch, cold; **resume**: a fresh loader at step {res['resume_step']:,} to its first batch (seek), or "
      "the measured replay time where a loader can only replay; **RSS**: peak resident memory of the trainer "
      "process (VmHWM after the timed steps, before the resume test; DataLoader workers: the largest worker's VmHWM) and of each server (flightd: VmHWM of a server started for the run; MinIO: peak VmRSS "
      f"sampled every 50 ms during the run); **W1 = W2**: the first {res['ids_steps']} global batches at world "
      "size 1 against the union of two ranks' batches (two concurrent processes with RANK/WORLD_SIZE, B/2 "
      "each), compared by sample id.\n")
    for wname in res["workloads"]:
        rows = loader_rows(res, wname)
        weft = next((r for r in rows if r["name"] == WEFT and r["sps"]), None)
        p(f"## {wname.capitalize()} rows\n")
        p(f"![samples/s]({plots.get(wname, '')})\n")
        p("| loader | samples/s | MB/s | vs Weft (fs) | CPU µs/sample (trainer + servers) | first batch | "
          "resume at step 100,000 | trainer RSS | server RSS | W1 = W2 |")
        p("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |")
        for r in rows:
            if r["error"] or not r["sps"]:
                p(f"| {r['title']} | **failed** | | | | | | | | {(r['error'] or '')[:200]} |")
                continue
            ratio = f"{r['sps'][0] / weft['sps'][0]:.2f}×" if weft else "—"
            kind = "/".join(r["resume_kind"])
            resume = secs(r["resume"]) + f" ({kind})" if r["resume"] else f"error: {(r['resume_err'] or '?')[:80]}"
            srv = ", ".join(f"{k} {mib(v)}" for k, v in r["server_rss"].items()) or "—"
            rss = mib(r["rss"])
            if r["workers_rss"]:
                rss += f" (+ workers ≤ {mib(r['workers_rss'])} each)"
            failed = f" ({r['failed_runs']} runs failed)" if r["failed_runs"] else ""
            if r["short_values"]:
                failed += f" ⚠ {r['short_values']:,} values arrived short (trailing NUL bytes lost), padded back"
            p(f"| {r['title']}{failed} | {fmt(r['sps'])} | {fmt(r['mbps'], digits=1)} | {ratio} | {cpu(r)} | "
              f"{secs(r['ttfb'])} | {resume} | {rss} | {srv} | {ident(r['identity'])} |")
        for r in limit_rows(res, wname):
            if r["error"]:
                p(f"| limit: {r['name']} | **failed** | | | | | | | | {r['error'][:200]} |")
                continue
            failed = f" ({r['failed']} runs failed)" if r["failed"] else ""
            p(f"| limit: {r['name']}{failed} | {fmt(r['sps'])} | {fmt(r['mbps'], digits=0)} | | | | | | | |")
        p("")
        p("CPU µs/sample: CPU-seconds (user + system) over the timed steps ÷ samples delivered — the trainer "
          "process with its DataLoader workers, plus each server process the loader needs (flightd; MinIO on "
          "the MinIO rows), split as trainer + servers.\n")
        w4 = [r for r in rows if r["w4"] or r["w4_err"]]
        if w4:
            p(f"**W = 4 ranks on this host** (four trainer processes of one job at once, B/4 samples per step "
              f"each, reading for {res['scale']['max_secs'] * 2} s after a barrier; Weft: one flightd serves "
              f"the four ranks and reads each block once; the peers: each rank reads on its own):\n")
            p("| loader | samples/s, all ranks | vs W = 1 | CPU µs/sample (all ranks + servers) |")
            p("| --- | ---: | ---: | ---: |")
            for r in w4:
                if r["w4_err"] and not r["w4"]:
                    p(f"| {r['title']} | **failed**: {r['w4_err'][:160]} | | |")
                    continue
                p(f"| {r['title']} | {fmt(r['w4'])} | {r['w4'][0] / r['sps'][0]:.2f}× | {fmt(r['w4_cpu'], digits=1)} |")
            p("")
        notes = [f"- {res['loaders'][r['name']]['title']}: {res['loaders'][r['name']]['how']}." for r in rows]
        p("How each loader is used:\n")
        p("\n".join(notes) + "\n")
        resume_notes = set()
        for name, lr in res["workloads"][wname]["loaders"].items():
            for run in lr.get("runs", []):
                n = (run.get("resume") or {}).get("note")
                if n:
                    resume_notes.add(f"- {res['loaders'][name]['title']}: {n.split(' (built')[0]}")
                    break
        if resume_notes:
            p("Resume, per loader (from the first run):\n")
            p("\n".join(sorted(resume_notes)) + "\n")
    p("## Goals (issue 7)\n")
    for wname in res["workloads"]:
        rows = loader_rows(res, wname)
        weft = next((r for r in rows if r["name"] == WEFT and r["sps"]), None)
        peers = [r for r in rows if not r["name"].startswith("weft") and r["sps"]]
        best = max(peers, key=lambda r: r["sps"][0], default=None)
        if weft and best:
            x = weft["sps"][0] / best["sps"][0]
            p(f"- {wname}: Weft (fs) {weft['sps'][0]:,.0f} samples/s is **{x:.2f}×** the best peer "
              f"({best['title']}, {best['sps'][0]:,.0f}); goal ≥ 2×: **{'met' if x >= 2 else 'not met'}**.")
        if weft and weft["resume"]:
            ms = weft["resume"][0] * 1e3
            p(f"- {wname}: Weft resume at step 100,000: {ms:,.0f} ms median; goal < 100 ms: "
              f"**{'met' if ms < 100 else 'not met'}**.")
        fails = [r["title"] for r in rows if r["identity"] and not r["identity"].get("identical")]
        p(f"- {wname}: W=1 vs W=2 identical batches: "
          + ", ".join(f"{r['title']} {'yes' if (r['identity'] or {}).get('identical') else 'no'}" for r in rows
                      if r["identity"]) + (f" — fail: {', '.join(fails)}" if fails else ""))
    p("")
    p("## Goals (issue 14: host slots)\n")
    for line in goals14(res):
        p(line)
    p("")
    p("## Where Weft loses and why\n")
    p("Every figure in this section is computed from the tables above (medians of the runs).\n")
    for line in where_weft_loses(res):
        p(line)
    p("")
    p("## Reproduce\n")
    p("```sh")
    p("make tools          # MinIO into ~/.cache/weft/bin (once)")
    p("make bench          # quick mode: python3 bench/harness/run.py --quick --out bench")
    p("make bench-full     # the issue's scale: python3 bench/harness/run.py --full --out bench")
    p("# one loader / workload:  python3 bench/harness/run.py --quick --only weft-fs,torch-dl-w0 --workloads small")
    p("# limits alone:  bench/work/bin/weftbench flight-ceiling --shape small --rows 256 --batches 20000")
    p("#                bench/work/bin/weftbench decode bench/work/data/small/a.parquet bench/work/data/small/b.parquet")
    p("#                iperf3 -s -1 -B 127.0.0.1 -p 5201 & iperf3 -c 127.0.0.1 -p 5201 -t 5 -J")
    p("```\n")
    p(f"The harness makes `bench/.venv` from Debian's `/usr/bin/python3` (python3-torch 1.13, python3-numpy "
      f"1.24) with the pins in `bench/harness/requirements.txt`; the data, MDS shards and stores live in "
      f"`bench/work/` and are reused while their key is unchanged (spec, generator source, library versions, "
      f"and for the Weft tables the sha256 of `bin/flightd`; see `bench/harness/cache.py`).\n")
    p("## Harness timing\n")
    v = res.get("venv") or {}
    p(f"This run took {res.get('wall_s', 0):.0f} s of wall time (the venv check before it: "
      f"{v.get('secs', 0):.1f} s{', venv created or updated' if v.get('created_or_updated') else ''}). "
      "Per phase (wall s; `phases` in results.json; every worker's own breakdown is under `timing`):\n")
    p("| phase | s | share |")
    p("| --- | ---: | ---: |")
    groups = {}
    for k, val in (res.get("phases") or {}).items():
        groups[k.split(":")[0]] = groups.get(k.split(":")[0], 0.0) + val
    for g, val in sorted(groups.items(), key=lambda kv: -kv[1]):
        subs = sorted(((k.split(":", 1)[1], x) for k, x in res["phases"].items() if k.startswith(g + ":")),
                      key=lambda kv: -kv[1])
        detail = "; ".join(f"{n} {x:.1f}" for n, x in subs if x >= 0.05)
        p(f"| {g}{' (' + detail + ')' if detail else ''} | {val:.1f} | {100 * val / max(res.get('wall_s', 1), 1e-9):.0f} % |")
    p("")
    (out / "results.md").write_text("\n".join(L))


def _n(x, digits=0):
    return f"{x:,.{digits}f}"


def where_weft_loses(res):
    """The 'where Weft loses and why' section: per workload, whether Weft
    reaches 2x the best peer, whether its resume is under 100 ms, which
    loaders fail W1 = W2, and the facts that explain the gaps (limits,
    memory). Every number comes from ``res``."""
    out = []
    cpus = res["machine"]["cpus"]
    for wname, w in res["workloads"].items():
        rows = loader_rows(res, wname)
        by = {r["name"]: r for r in rows}
        lims = {lim["key"]: lim for lim in limit_rows(res, wname)}
        fs, mn = by.get("weft-fs"), by.get("weft-minio")
        weft_ok = [r for r in (fs, mn, by.get("weft-fs-shm"), by.get("weft-minio-shm")) if r and r["sps"]]
        peers = [r for r in rows if not r["name"].startswith("weft") and r["sps"]]
        best = max(peers, key=lambda r: r["sps"][0], default=None)
        out.append(f"**{wname.capitalize()} rows.**\n")
        if not weft_ok or not best:
            out.append(f"- No comparison: {'no Weft figures' if not weft_ok else 'no peer figures'} "
                       "(see the table for the error).\n")
            continue
        parts = []
        for r in weft_ok:
            x = r["sps"][0] / best["sps"][0]
            parts.append(f"{r['title'].replace('Weft TrainLoader, flightd on ', 'Weft on ')} "
                         f"{_n(r['sps'][0])} samples/s = {x:.2f}×")
        reach = any(r["sps"][0] >= 2 * best["sps"][0] for r in weft_ok)
        worst = max(weft_ok, key=lambda r: r["sps"][0])  # the Weft row the verdict rests on
        out.append(f"- **2× the best peer: {'yes' if reach else 'no'}** (on medians). Best peer: {best['title']}, "
                   f"{_n(best['sps'][0])} samples/s; " + ", ".join(parts) + " of it (goal ≥ 2.00×). Run to run: "
                   f"Weft's slowest run ({worst['title'].replace('Weft TrainLoader, flightd on ', 'on ')}, "
                   f"{_n(worst['sps'][1])}) against the best peer's fastest ({_n(best['sps'][2])}) is "
                   f"{worst['sps'][1] / best['sps'][2]:.2f}×.")
        res_parts, all_fast = [], True
        for r in weft_ok:
            if r["resume"]:
                m, lo, hi = (v * 1e3 for v in r["resume"])
                all_fast &= m < 100
                res_parts.append(f"{r['title'].replace('Weft TrainLoader, flightd on ', '')} {_n(m)} ms "
                                 f"[{_n(lo)}–{_n(hi)}]")
            else:
                all_fast = False
                res_parts.append(f"{r['title']}: no resume figure")
        others = sorted((r for r in peers if r["resume"]), key=lambda r: r["resume"][0])
        fastest = others[0] if others else None
        peer_note = (f"; the fastest peer, {fastest['title']}, takes {secs(fastest['resume'])} "
                     f"({'/'.join(fastest['resume_kind'])})") if fastest else ""
        out.append(f"- **Resume at step {res['resume_step']:,} under 100 ms: {'yes' if all_fast else 'no'}.** "
                   f"Weft (median [min–max] of the runs, fresh TrainLoader to first batch): "
                   + ", ".join(res_parts) + peer_note + ".")
        fails = [r for r in rows if r["identity"] and r["identity"].get("identical") is False]
        errs = [r for r in rows if r["identity"] and r["identity"].get("identical") is None]
        passes = [r for r in rows if r["identity"] and r["identity"].get("identical")]
        if fails or errs:
            txt = "; ".join(f"{r['title']} ({r['identity']['steps_same_samples']}/{r['identity']['steps']} steps with "
                            f"the same samples)" for r in fails)
            if errs:
                txt += ("; " if txt else "") + "; ".join(f"{r['title']} (check failed: "
                                                           f"{(r['identity'].get('error') or '?')[:80]})" for r in errs)
            out.append(f"- **W1 = W2 fails for:** {txt}. Identical for: "
                       + (", ".join(r["title"] for r in passes) or "none") + ".")
        else:
            out.append("- **W1 = W2:** identical for every loader.")
        # Why: the limits and where the peers' samples/s come from.
        ceil, dec, ip = lims.get("flight_ceiling"), lims.get("decode"), lims.get("iperf3")
        ref = fs if fs and fs["sps"] else weft_ok[0]
        ctx = []
        if ceil and ceil["mbps"]:
            ctx.append(f"the arrow-go Flight ceiling (one prebuilt batch resent, no storage, no decode) is "
                       f"{_n(ceil['mbps'][0])} MB/s = {_n(ceil['sps'][0])} samples/s, and Weft on fs reaches "
                       f"{100 * ref['mbps'][0] / ceil['mbps'][0]:.0f} % of it")
        if dec and dec["mbps"]:
            ctx.append(f"arrow-go's sequential pqarrow decode of the same files runs at {_n(dec['mbps'][0])} MB/s "
                       f"(Weft on fs: {100 * ref['mbps'][0] / dec['mbps'][0]:.0f} % of that)")
        if ip and ip["mbps"]:
            ctx.append(f"iperf3 moves {_n(ip['mbps'][0])} MB/s of raw bytes over loopback")
        if mn and mn["sps"] and fs and fs["sps"]:
            ctx.append(f"on MinIO Weft delivers {mn['sps'][0] / fs['sps'][0]:.2f}× its fs rate (MinIO shares the "
                       f"same {cpus} CPUs)")
        if ctx:
            out.append("- Limits on this machine: " + "; ".join(ctx) + ".")
        dl = [r for r in peers if r["name"].startswith("torch-dl") and r["rss"]]
        if dl:
            data_mb = sum(w["spec"]["rows"]) * (8 + (32 * 4 + 8 if wname == "small" else 100 << 10)) / 1e6
            d0 = max(dl, key=lambda r: r["sps"][0])
            weft_mem = ref["rss"] + sum(ref["server_rss"].values())
            line = (f"- Where the DataLoader's samples/s come from: it reads both tables into the trainer's memory "
                    f"when it starts ({_n(data_mb)} MB of row data, {_n(w.get('parquet_bytes', 0) / 1e6)} MB of "
                    f"Parquet; its trainer RSS peaks at {mib(d0['rss'])}"
                    + (f", plus up to {mib(max(r['workers_rss'] for r in dl))} per worker with num_workers=2"
                       if any(r["workers_rss"] for r in dl) else "")
                    + f"), then each step is an in-process gather from RAM ({_n(d0['mbps'][0])} MB/s for "
                      f"{d0['title']}). Weft streams the rows from storage through a flightd process that shares "
                      f"the same {cpus} CPUs with the trainer (decode, gather, Flight over loopback); Weft's "
                      f"trainer and flightd peak at {mib(weft_mem)} together.")
            if ceil and ceil["mbps"] and d0["mbps"][0] > ceil["mbps"][0]:
                line += (f" The DataLoader's {_n(d0['mbps'][0])} MB/s is {d0['mbps'][0] / ceil['mbps'][0]:.1f}× "
                         f"the Flight ceiling: no loader that receives its batches over Flight from another "
                         f"process can match it on this machine, and the in-memory DataLoader cannot hold a "
                         f"dataset larger than RAM.")
            out.append(line)
        for r in peers:
            if r["rss"] and ref["rss"]:
                total = ref["rss"] + sum(ref["server_rss"].values())
                if r["rss"] + r["workers_rss"] < total and r["name"] not in {x["name"] for x in dl}:
                    out.append(f"- Memory: {r['title']} uses less in all ({mib(r['rss'] + r['workers_rss'])}) than "
                               f"Weft's trainer + servers ({mib(total)}).")
        slower = [r for r in peers if r["sps"][0] > ref["sps"][0]]
        if slower:
            out.append("- Peers faster than Weft on fs: " + ", ".join(
                f"{r['title']} {r['sps'][0] / ref['sps'][0]:.2f}×" for r in slower) + ".")
        out.append("")
    return out


def plot(res, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = {}
    for wname in res["workloads"]:
        rows = [r for r in loader_rows(res, wname) if r["sps"]]
        if not rows:
            continue
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
        labels = [r["title"].replace(", ", ",\n").replace(" (", "\n(") for r in rows]
        colors = ["tab:orange" if r["name"].startswith("weft") else "tab:blue" for r in rows]
        for ax, key, title, scale in ((axes[0], "sps", "samples/s (median, min–max)", 1.0),
                                      (axes[1], "ttfb", "time to first batch, s", 1.0),
                                      (axes[2], "resume", "resume at step 100,000, s (log)", 1.0)):
            vals = [(r[key] or (0, 0, 0)) for r in rows]
            m = [v[0] * scale for v in vals]
            err = [[(v[0] - v[1]) * scale for v in vals], [(v[2] - v[0]) * scale for v in vals]]
            ax.barh(range(len(rows)), m, xerr=err, color=colors, capsize=3)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels(labels if ax is axes[0] else [""] * len(rows), fontsize=7)
            ax.invert_yaxis()
            ax.set_title(title, fontsize=9)
            if key == "resume":
                ax.set_xscale("log")
                for i, r in enumerate(rows):
                    if r["resume"]:
                        ax.text(m[i], i, " " + "/".join(r["resume_kind"]), va="center", fontsize=7)
            if key == "sps":
                for lim in limit_rows(res, wname):
                    if lim["sps"] and lim["key"] == "flight_ceiling":
                        ax.axvline(lim["sps"][0], color="gray", ls="--", lw=1)
                        ax.text(lim["sps"][0], len(rows) - 0.5, " Flight ceiling", fontsize=7, color="gray")
        fig.suptitle(f"{wname} rows ({res['mode']} mode, {res['runs']} runs; {res['machine']['cpus']} CPUs)",
                     fontsize=10)
        fig.tight_layout()
        name = f"results-{wname}.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        files[wname] = name
    return files
