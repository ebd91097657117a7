#!/usr/bin/env python3
"""Search and listing against the machine's floor (docs/performance.md, issue 36 targets).

Generates the fixture stores, then times dsh-refs beside its baselines in the same run —
`rg -l -F <the rarer word>` over the logs, `find <store> -type f`, `cat` of every log — and
prints each figure's min / median / max over the runs, the ratio pair by pair, and the peak
RSS of each process (the kernel's maximum resident set size, from wait4; a figure near the
size of this Python process, ~15 MiB, is that floor: the child is forked from it).

Run by hand on a machine as quiet as you can get (never as a timed test in CI):

    cargo build --release --locked --bin dsh-refs --example prepare_big
    cargo build --release --locked -p dsh-search --example search_probe
    python3 scripts/perf_ratios.py --sizes 1000,10000 --runs 5
    # before/after in the same run: a second binary (e.g. main's, copied aside)
    python3 scripts/perf_ratios.py --sizes 10000 --base /tmp/dsh-refs-main

Works (`--work`, comma separated; all by default):
- `search`: a warm `search --json` of two words, the index built and the logs in page cache,
  beside `rg -l -F` of the rarer word.
- `build`: `search` on an empty cache (the first index build), beside the same `rg`
  and `cat` of every log.
- `listing`: the first `sessions --json` on an empty cache, beside `find -type f`.
- `candidates`: a cold `candidates` process, the listing index present, beside `find`.

Search fixture: `search_probe gen` (sessions of `--messages` messages of `--bytes` bytes,
a Zipf-like vocabulary). Listing fixture: `prepare_big many` (two turns and a title each).
Every store is made once under `--dir` and reused. Needs `rg` (ripgrep) on PATH.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

SYLLABLES = [
    "ka", "fu", "re", "dis", "mo", "lan", "te", "ri", "so", "ven", "pa", "gor", "li", "nu",
    "xe", "bra", "to", "shi", "el", "qua", "mir", "do", "zen", "ult",
]


def word(rank):
    """The fixture vocabulary's word of this rank (search_fixture.rs::vocabulary)."""
    i = rank - 1
    out = ""
    while True:
        out += SYLLABLES[i % len(SYLLABLES)]
        i //= len(SYLLABLES)
        if i == 0:
            return out


def run_once(cmd, env=None, setup=None):
    """One whole-process run: (wall s, cpu s, peak RSS KiB, exit code)."""
    if setup:
        setup()
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode


def spread(values, fmt="{:.3f}"):
    return "{} ({}–{})".format(
        fmt.format(statistics.median(values)), fmt.format(min(values)), fmt.format(max(values))
    )


def compare(title, commands, runs, warmup=1):
    """Run the commands in turn, A B C A B C …; print walls, CPU, RSS and ratios to the last."""
    results = {name: [] for name, *_ in commands}
    for i in range(warmup + runs):
        for name, cmd, env, setup in commands:
            r = run_once(cmd, env, setup)
            if r[3] != 0:
                print(f"  ! {name} exited {r[3]}: {' '.join(cmd)}", file=sys.stderr)
            if i >= warmup:
                results[name].append(r)
    base_name = commands[-1][0]
    base = results[base_name]
    print(f"\n## {title} ({runs} runs each, alternating, after {warmup} warm-up)")
    print("| command | wall s median (min–max) | CPU s | peak RSS MiB | wall ratio to "
          f"{base_name} median (min–max) |")
    print("|---|---|---|---|---|")
    for name, *_ in commands:
        rs = results[name]
        ratios = [a[0] / b[0] for a, b in zip(rs, base) if b[0] > 0]
        print("| {} | {} | {} | {} | {} |".format(
            name,
            spread([r[0] for r in rs]),
            spread([r[1] for r in rs]),
            spread([r[2] / 1024 for r in rs], "{:.0f}"),
            spread(ratios, "{:.2f}") if name != base_name else "1",
        ))
    sys.stdout.flush()
    return results


def tree_bytes(root):
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def warm_cache(root):
    """Read every file once, so every command finds the logs in the page cache."""
    subprocess.run(
        ["sh", "-c", 'find "$1" -type f -print0 | xargs -0 cat > /dev/null', "sh", root],
        check=True,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build-runs", type=int, default=None,
                    help="runs of the first index build (default: --runs)")
    ap.add_argument("--work", default="search,build,listing,candidates")
    ap.add_argument("--dir", default="/tmp/perf-ratios")
    ap.add_argument("--bin", default="target/release/dsh-refs")
    ap.add_argument("--base", help="a second dsh-refs binary timed beside --bin")
    ap.add_argument("--examples", default="target/release/examples")
    ap.add_argument("--messages", type=int, default=32)
    ap.add_argument("--bytes", type=int, default=1000)
    ap.add_argument("--words", default="700,3000",
                    help="ranks of the two query words; rg searches the second (rarer)")
    args = ap.parse_args()
    if shutil.which("rg") is None:
        sys.exit("perf_ratios: needs rg (ripgrep) on PATH")
    work = set(args.work.split(","))
    binaries = [("dsh-refs", os.path.abspath(args.bin))]
    if args.base:
        binaries.append(("base", os.path.abspath(args.base)))
    examples = os.path.abspath(args.examples)
    ranks = [int(r) for r in args.words.split(",")]
    query = " ".join(word(r) for r in ranks)
    rare = word(ranks[-1])
    os.makedirs(args.dir, exist_ok=True)
    home = os.path.join(args.dir, "home")
    os.makedirs(home, exist_ok=True)

    def env_with(cache):
        env = dict(os.environ, HOME=home, XDG_CACHE_HOME=cache, XDG_CONFIG_HOME=home)
        env.pop("DSH_REFS_STORE", None)
        return env

    def fresh(path):
        return lambda: shutil.rmtree(path, ignore_errors=True)

    def ours(store, argv, label, cache_name, prime=False, clean=False):
        """Each binary's command on `store`, with its own cache dir: primed by one run (an
        index or listing present), or emptied before every run (a first run)."""
        commands = []
        for name, binary in binaries:
            cache = os.path.join(args.dir, cache_name.format(name))
            cmd = [binary, "--store", store, "--no-foreign-sources", *argv]
            if prime:
                run_once(cmd, env_with(cache))
            commands.append((f"{name} {label}", cmd, env_with(cache),
                             fresh(cache) if clean else None))
        return commands

    print(f"# perf_ratios: {os.uname().nodename}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; query {query!r}, rg word {rare!r}")
    for size in [int(s) for s in args.sizes.split(",")]:
        if work & {"search", "build"}:
            store = os.path.join(args.dir, f"search-{size}", "store")
            if not os.path.isdir(store):
                print(f"generating {store} …", file=sys.stderr)
                subprocess.run([os.path.join(examples, "search_probe"), "gen", store,
                                str(size), str(args.messages), str(args.bytes)], check=True,
                               stdout=subprocess.DEVNULL)
            warm_cache(store)
            mb = tree_bytes(store) / 1e6
            print(f"\n# {size} sessions: search fixture {store}, {mb:.0f} MB of logs")
            rg = ("rg -l -F", ["rg", "-l", "-F", rare, store], None, None)
            cat = ("cat", ["sh", "-c", 'find "$1" -type f -print0 | xargs -0 cat > /dev/null',
                           "sh", store], None, None)
            if "search" in work:
                commands = ours(store, ["search", "--json", query], "search --json",
                                "cache-{}-%d" % size, prime=True)
                compare(f"warm search, {size} sessions", commands + [rg], args.runs)
            if "build" in work:
                commands = ours(store, ["search", "--json", query], "first index build",
                                "fresh-{}", clean=True)
                compare(f"first index build (empty cache), {size} sessions, {mb:.0f} MB",
                        commands + [cat, rg], args.build_runs or args.runs)
        if work & {"listing", "candidates"}:
            store = os.path.join(args.dir, f"listing-{size}")
            if not os.path.isdir(store):
                print(f"generating {store} …", file=sys.stderr)
                subprocess.run([os.path.join(examples, "prepare_big"), "many", store,
                                str(size)], check=True, stdout=subprocess.DEVNULL)
                time.sleep(2.1)  # directory mtimes younger than 2 s are not trusted
            warm_cache(store)
            mb = tree_bytes(store) / 1e6
            print(f"\n# {size} sessions: listing fixture {store}, {mb:.0f} MB of logs")
            find = ("find -type f", ["find", store, "-type", "f"], None, None)
            if "listing" in work:
                commands = ours(store, ["sessions", "--json"], "first sessions --json",
                                "fresh-{}", clean=True)
                compare(f"first listing (empty cache), {size} sessions",
                        commands + [find], args.runs)
            if "candidates" in work:
                commands = ours(store, ["candidates", "--session", "sess-00001", "--query",
                                        "topic 42"], "cold candidates",
                                "listed-{}-%d" % size, prime=True)
                compare(f"cold candidates (listing index present), {size} sessions",
                        commands + [find], args.runs)


if __name__ == "__main__":
    main()
