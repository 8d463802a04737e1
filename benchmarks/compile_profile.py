"""Where the test suite's numba compile time goes: a pytest plugin listening to numba's "numba:compile" events, and
the report of its events: per dispatcher, the signatures compiled, and the signatures that repeat another one but
for an array's layout or writeability (a copy of the kernel that one fixed array type would have saved).

Run test files with an empty cache and this plugin loaded (``run`` makes the empty cache folder, sets
NUMBA_CACHE_DIR and runs pytest in a child process with the plugin; other arguments go to pytest)::

    python3 benchmarks/compile_profile.py run [--boundscheck] [--json FILE] -- [pytest arguments, test files]

or by hand::

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=$PWD:$PWD/benchmarks \
        python3 -m pytest -q -p compile_profile -p no:randomly [tests ...]

and print the report of a run again (``--top N`` dispatchers)::

    python3 benchmarks/compile_profile.py report [FILE]

or count what a cache folder holds after a run (``census``: numba's index files, ``*.nbi``, unpickled to their
signatures; per dispatcher the signatures and the bytes of their machine code, and, for every signature beyond a
dispatcher's first, what sets it apart from the nearest other one: an array's layout or writeability, a dtype or
integer width, a literal, None against a value, a first-class function, a tuple or system of other fields)::

    python3 benchmarks/compile_profile.py census [CACHE_FOLDER] [--top N] [--json FILE]

(the folder defaults to $NUMBA_CACHE_DIR, else this source's folder of the package cache, ``_kernels.cache``),
or compare the events of several processes (``overlap``: the xdist workers' files of one run, and the
NUMBA_BOUNDSCHECK run's beside them): per process its compiles and self CPU seconds, and the signatures that more
than one process compiled, with the CPU seconds of every copy beyond the cheapest (each process compiles what is
not yet in the cache when it needs it; a run into another cache folder compiles everything it needs again)::

    python3 benchmarks/compile_profile.py overlap FILE [FILE ...]

Each compile of a dispatcher for one signature is one event (a load from numba's disk cache is none). Its *self*
seconds are its duration less the compiles nested in it (a kernel compiling the kernels it calls while it is typed),
so the self seconds add up to the compile time; both wall and process CPU seconds are kept, and on a shared machine
the CPU seconds are the figure to compare. At the end of a run it prints the dispatchers by self CPU seconds (with
how many signatures each compiled) and the repeated signatures, and writes every event, with the test that
triggered it, to benchmarks/results/compile_profile.json (or $COMPILE_PROFILE_JSON; under pytest-xdist each worker
writes its own file, compile_profile-gw0.json and so on).

A repeated signature is one whose arguments equal those of another signature of the same dispatcher once every
array type is reduced to its dtype and dimension: numba types a C-contiguous array as layout ``C`` and a strided
view as ``A`` (a one-row view of a matrix, or a slice of length one, is C-contiguous), and a read-only array apart
from a writeable one; each such pair compiles the kernel, and every kernel it calls with those arrays, twice.
"""

import os

# One BLAS thread, set before numpy loads OpenBLAS: its thread pool makes small dense solves up to 10x
# slower on a busy machine (benchmarks/blas_threads.py). Set the variables yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

_events = []  # finished compiles: dicts
_stack = []  # open compiles: [wall start, cpu start, nested wall seconds, nested cpu seconds]
_current_test = ["(collection)"]

# "readonly array(float64, 1d, C)" (str) or "Array(float64, 1, 'C', True, aligned=True)" (repr) -> "array(float64,
# 1d)": the type less its layout and writeability
_ARRAY = re.compile(r"(?:readonly )?(?:unaligned )?array\(([^,()]+), (\d+)d, [CFA]\)")
_ARRAY_REPR = re.compile(r"Array\(([^,()]+), (\d+), '[CFA]', (?:True|False), aligned=(?:True|False)\)")


def reduced(arg):
    """An argument type's text with every array type reduced to its dtype and dimension."""
    return _ARRAY_REPR.sub(r"array(\1, \2d)", _ARRAY.sub(r"array(\1, \2d)", arg))


def split_args(text):
    """The argument types of a signature's text "(t1, t2, ...)" (the form older profiles stored)."""
    inner = text.strip()[1:-1]
    args, depth, start = [], 0, 0
    for k, char in enumerate(inner):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            args.append(inner[start:k].strip())
            start = k + 1
    if inner[start:].strip():
        args.append(inner[start:].strip())
    return args


def _listener_class():
    from numba.core import event  # noqa: PLC0415  (the report alone needs no numba)

    class CompileListener(event.Listener):
        def on_start(self, ev):
            _stack.append([time.perf_counter(), time.process_time(), 0.0, 0.0, time.time()])

        def on_end(self, ev):
            wall0, cpu0, nested_wall, nested_cpu, started = _stack.pop()
            seconds = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0
            if _stack:
                _stack[-1][2] += seconds
                _stack[-1][3] += cpu
            function = ev.data["dispatcher"].py_func
            _events.append(
                dict(
                    name=f"{function.__module__}.{function.__qualname__}",
                    args=[str(a) for a in ev.data["args"]],
                    seconds=seconds,
                    self_seconds=seconds - nested_wall,
                    cpu_seconds=cpu,
                    self_cpu_seconds=cpu - nested_cpu,
                    depth=len(_stack),
                    test=_current_test[0],
                    started=started,
                    worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
                )
            )

    return event, CompileListener


def pytest_configure(config):
    event, listener = _listener_class()
    event.register("numba:compile", listener())


def _json_path():
    path = Path(os.environ.get("COMPILE_PROFILE_JSON", Path(__file__).parent / "results" / "compile_profile.json"))
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # under pytest-xdist each worker writes its own file
    return path.with_name(f"{path.stem}-{worker}{path.suffix}") if worker else path


def _write_json(events=None, path=None):
    path = path or _json_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_events if events is None else events, indent=1))
    return path


def pytest_runtest_protocol(item, nextitem):
    _current_test[0] = item.nodeid


def pytest_runtest_teardown(item, nextitem):
    if nextitem is None or nextitem.path != item.path:  # the events so far after each test file, for long runs
        _write_json()


def _normalised(rows):
    """The rows with ``args`` a list and ``self_cpu_seconds`` present (older profiles: the wall seconds)."""
    out = []
    for event_row in rows:
        row = dict(event_row)
        if isinstance(row["args"], str):
            row["args"] = split_args(row["args"])
        row.setdefault("self_cpu_seconds", row["self_seconds"])
        out.append(row)
    return out


def table(rows, top):
    """Dispatchers by self CPU seconds: seconds, signatures compiled, name and the test files that compiled it."""
    by_name = defaultdict(lambda: [0.0, 0.0, 0, set()])
    for row in rows:
        entry = by_name[row["name"]]
        entry[0] += row["self_cpu_seconds"]
        entry[1] += row["self_seconds"]
        entry[2] += 1
        entry[3].add(row["test"].split("::")[0])
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])
    lines = [f"{'cpu s':>8} {'wall s':>8} {'sigs':>4}  dispatcher  (test files that compiled it)"]
    for name, (cpu, seconds, count, files) in ranked[:top]:
        lines.append(f"{cpu:8.2f} {seconds:8.2f} {count:4d}  {name}  ({', '.join(sorted(files))[:100]})")
    cpu = sum(row["self_cpu_seconds"] for row in rows)
    wall = sum(row["self_seconds"] for row in rows)
    lines.append(f"{cpu:8.2f} {wall:8.2f} {len(rows):4d}  total: {len(by_name)} dispatchers")
    return "\n".join(lines)


def repeats(rows):
    """The repeated signatures: [(name, [rows of one reduced signature, first compiled first])], most costly
    first (the cost of a group: the self CPU seconds of all but its first row)."""
    groups, seen = defaultdict(list), set()
    for row in rows:
        if (row["name"], tuple(row["args"])) in seen:  # the same text twice: two dispatchers of one name (closures)
            continue
        seen.add((row["name"], tuple(row["args"])))
        groups[row["name"], tuple(reduced(a) for a in row["args"])].append(row)
    found = [(name, group) for (name, _), group in groups.items() if len(group) > 1]
    return sorted(found, key=lambda g: -sum(r["self_cpu_seconds"] for r in g[1][1:]))


def repeats_table(rows, top):
    found = repeats(rows)
    extra = sum(r["self_cpu_seconds"] for _, group in found for r in group[1:])
    lines = [
        f"repeated signatures (same dtypes and dimensions, another layout or writeability): {len(found)} "
        f"dispatchers, {sum(len(g) - 1 for _, g in found)} extra compiles, {extra:.2f} s CPU (self)"
    ]
    for name, group in found[:top]:
        cost = sum(r["self_cpu_seconds"] for r in group[1:])
        lines.append(f"{cost:8.2f}  {name}  x{len(group)}")
        first = group[0]["args"]
        for row in group:
            differ = [f"{k}: {a}" for k, (a, b) in enumerate(zip(row["args"], first, strict=True)) if a != b]
            lines.append(
                f"{'':10}{row['self_cpu_seconds']:6.2f} s  {row['test'][:70]}  "
                + ("; ".join(differ) if differ else "(first)")
            )
    return "\n".join(lines)


def report(rows, top):
    rows = _normalised(rows)
    return (
        f"numba compiles by dispatcher (self seconds, signatures compiled):\n{table(rows, top)}\n\n"
        f"{repeats_table(rows, top)}"
    )


def overlap(processes):
    """The compiles of several processes compared: ``processes`` maps a name to its event rows. Returns (per
    process: (name, compiles, self CPU seconds, signatures another process also compiled), distinct signatures,
    signatures compiled by more than one process, the self CPU seconds of their copies beyond the cheapest)."""
    cpu = defaultdict(dict)  # (dispatcher, args) -> {process: self CPU seconds}
    for name, rows in processes.items():
        for row in _normalised(rows):
            key = (row["name"], tuple(row["args"]))
            cpu[key][name] = cpu[key].get(name, 0.0) + row["self_cpu_seconds"]
    shared = {key: by for key, by in cpu.items() if len(by) > 1}
    per_process = []
    for name, rows in processes.items():
        keys = {(row["name"], tuple(row["args"])) for row in _normalised(rows)}
        per_process.append((name, len(rows), sum(row["self_cpu_seconds"] for row in _normalised(rows)),
                            sum(key in shared for key in keys)))
    extra = sum(sum(by.values()) - min(by.values()) for by in shared.values())
    return per_process, len(cpu), len(shared), extra


def overlap_report(processes):
    per_process, distinct, shared, extra = overlap(processes)
    lines = [f"{'compiles':>8} {'cpu s':>8} {'shared':>6}  process (shared: its signatures another one compiled too)"]
    for name, compiles, cpu, also in per_process:
        lines.append(f"{compiles:8d} {cpu:8.1f} {also:6d}  {name}")
    lines.append(f"{distinct} distinct signatures; {shared} compiled by more than one process, {extra:.1f} s CPU "
                 "(self) in the copies beyond the cheapest")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter):
    top = int(os.environ.get("COMPILE_PROFILE_TOP", "40"))
    for line in report(_events, top).splitlines():
        terminalreporter.write_line(line)
    path = _write_json()
    terminalreporter.write_line(f"compile events written to {path}")


def _leaves(typ, path, out):
    """The leaf types of a numba type (tuples and named tuples, such as the time loops' systems, opened) by path."""
    from numba.core import types  # noqa: PLC0415  (numba only for a census)

    if isinstance(typ, types.BaseTuple):
        out[path + "#"] = f"{type(typ).__name__} {getattr(typ, 'instance_class', tuple).__name__}/{len(typ)}"
        for k, member in enumerate(typ):
            _leaves(member, f"{path}.{k}", out)
    else:
        out[path] = typ
    return out


def _difference(a, b):
    """What sets leaf type ``a`` apart from ``b`` (kinds as in the module docstring)."""
    from numba.core import types  # noqa: PLC0415

    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return "tuple or system fields"
    if isinstance(a, types.Array) and isinstance(b, types.Array):
        kinds = [
            kind
            for kind, differs in (
                ("dtype", a.dtype != b.dtype),
                ("ndim", a.ndim != b.ndim),
                (f"layout {''.join(sorted({a.layout, b.layout}))}", a.layout != b.layout),
                ("readonly", a.mutable != b.mutable),
            )
            if differs
        ]
        return "array " + ", ".join(kinds) if kinds else "array (other)"
    if isinstance(a, types.Literal) or isinstance(b, types.Literal):
        return "literal"
    if isinstance(a, types.NoneType) or isinstance(b, types.NoneType):
        return "None vs " + type(b if isinstance(a, types.NoneType) else a).__name__
    if isinstance(a, types.FunctionType) or isinstance(b, types.FunctionType):
        return "function type"
    if isinstance(a, types.Number) and isinstance(b, types.Number):
        return f"scalar {min(str(a), str(b))} vs {max(str(a), str(b))}"
    return f"{min(type(a).__name__, type(b).__name__)} vs {max(type(a).__name__, type(b).__name__)}"


def census(folder):
    """The signatures in the numba cache ``folder``: rows (dispatcher, signature text, bytes, why) where ``why`` is
    None for a dispatcher's first signature, else the differences from its nearest earlier one ("; "-joined)."""
    import pickle  # noqa: PLC0415

    import numba  # noqa: F401, PLC0415  (the index files unpickle to numba types)

    rows = []
    for index in sorted(Path(folder).rglob("*.nbi")):
        with open(index, "rb") as handle:
            pickle.load(handle)  # numba's version
            _, overloads = pickle.loads(handle.read())
        name = index.relative_to(folder).as_posix()[: -len(".nbi")]
        seen = []
        for key, data_name in overloads.items():
            args = tuple(getattr(key[0], "args", key[0]))
            leaves = {}
            for k, arg in enumerate(args):
                _leaves(arg, str(k), leaves)
            why = None
            if seen:  # the nearest earlier signature: fewest differing leaves
                nearest = min(
                    seen,
                    key=lambda other: sum(str(other.get(p)) != str(leaves.get(p)) for p in set(other) | set(leaves)),
                )
                why = "; ".join(
                    sorted(
                        {
                            _difference(nearest.get(p), leaves.get(p))
                            for p in set(nearest) | set(leaves)
                            if str(nearest.get(p)) != str(leaves.get(p))
                        }
                    )
                )
            seen.append(leaves)
            data = index.parent / data_name
            rows.append((name, str(args), data.stat().st_size if data.exists() else 0, why))
    return rows


def census_report(rows, top):
    """Dispatchers by bytes of machine code with their signature counts, then the extra signatures by reason."""
    by_name, by_why = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0, defaultdict(int)])
    for name, _, size, why in rows:
        by_name[name][0] += 1
        by_name[name][1] += size
        if why is not None:
            entry = by_why[why]
            entry[0] += 1
            entry[1] += size
            entry[2][name] += 1
    total = sum(size for _, _, size, _ in rows)
    lines = [
        f"{len(rows)} signatures of {len(by_name)} dispatchers, {total / 1e6:.1f} MB of machine code",
        f"{'sigs':>5} {'MB':>7}  dispatcher",
    ]
    for name, (count, size) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{count:5d} {size / 1e6:7.2f}  {name}")
    extra = sum(entry[0] for entry in by_why.values())
    lines.append(
        f"\nsignatures beyond each dispatcher's first: {extra}, by what sets them apart from the nearest other"
    )
    lines.append(f"{'sigs':>5} {'MB':>7}  difference  (dispatchers, most signatures first)")
    for why, (count, size, names) in sorted(by_why.items(), key=lambda kv: -kv[1][1]):
        most = ", ".join(
            f"{n.rsplit('/', 1)[-1].split('-')[0]} x{c}" for n, c in sorted(names.items(), key=lambda kv: -kv[1])[:4]
        )
        lines.append(f"{count:5d} {size / 1e6:7.2f}  {why}  ({most})")
    return "\n".join(lines)


def _default_cache_folder():
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    from recursive_mbd._kernels import cache  # noqa: PLC0415

    return cache.cache_base() / f"{cache.VERSION}-{cache.source_key()}"  # (not cache_folder(), which makes it)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run pytest (arguments after --) with an empty cache and this plugin")
    run.add_argument("--boundscheck", action="store_true", help="NUMBA_BOUNDSCHECK=1, as in CI's second run")
    run.add_argument(
        "--json",
        type=Path,
        default=None,
        help="events file (default: $COMPILE_PROFILE_JSON or benchmarks/results/compile_profile.json)",
    )
    run.add_argument("--top", type=int, default=40)
    run.add_argument("pytest_args", nargs=argparse.REMAINDER)
    rep = sub.add_parser("report", help="print the report of a profile's events file")
    rep.add_argument("json", type=Path, nargs="?", default=None)
    rep.add_argument("--top", type=int, default=40)
    cen = sub.add_parser("census", help="count the signatures and machine code in a numba cache folder")
    cen.add_argument("folder", type=Path, nargs="?", default=None)
    cen.add_argument("--top", type=int, default=40)
    cen.add_argument("--json", type=Path, default=None, help="write the rows (dispatcher, signature, bytes, why)")
    ovl = sub.add_parser("overlap", help="compare the compiles of several processes' events files")
    ovl.add_argument("files", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "overlap":
        print(overlap_report({f"{path.parent.name}/{path.stem}": json.loads(path.read_text()) for path in args.files}))
        return 0
    if args.command == "census":
        rows = census(args.folder or _default_cache_folder())
        print(census_report(rows, args.top))
        if args.json is not None:
            args.json.write_text(
                json.dumps(
                    [dict(zip(("dispatcher", "signature", "bytes", "why"), row, strict=True)) for row in rows], indent=1
                )
            )
        return 0
    if args.command == "report":
        print(report(json.loads((args.json or _json_path()).read_text()), args.top))
        return 0
    root = Path(__file__).resolve().parent.parent
    pytest_args = [a for a in args.pytest_args if a != "--"]
    with tempfile.TemporaryDirectory(prefix="compile_profile_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, COMPILE_PROFILE_TOP=str(args.top))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), str(root / "benchmarks"), env.get("PYTHONPATH")]))
        if args.json is not None:
            env["COMPILE_PROFILE_JSON"] = str(args.json.resolve())
        if args.boundscheck:
            env["NUMBA_BOUNDSCHECK"] = "1"
        before = os.times()
        code = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "compile_profile", *pytest_args],
            check=False,
            env=env,
            cwd=root,
        ).returncode
        after = os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    print(f"pytest process: {cpu:.1f} s CPU (user + system), {after.elapsed - before.elapsed:.1f} s wall")
    return code


if __name__ == "__main__":
    sys.exit(main())
