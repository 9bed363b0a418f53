"""Python tool latency, call to observation, against a bare `python -c` subprocess in the same run.

    .venv/bin/python bench/python_tool.py --calls 200

The two are interleaved call by call so that both see the same machine load. Prints p50/p99 of
each and their ratio; writes bench/results/python_tool.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

from wikisim.tools.python_sandbox import PythonTool, SandboxConfig

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "mean_ms": statistics.fmean(ms),
        "min_ms": min(ms),
        "max_ms": max(ms),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls of each kind")
    parser.add_argument("--code", default="print(1+1)", help="the one-line program")
    args = parser.parse_args()

    tool = PythonTool(SandboxConfig())
    first = tool.run(args.code)  # also warms the page cache for both
    if not first.ok:
        raise SystemExit(f"the sandbox did not run {args.code!r}: {first.observation}")
    subprocess.run([sys.executable, "-c", args.code], capture_output=True, check=True)

    tool_ms: list[float] = []
    bare_ms: list[float] = []
    for _ in tqdm(range(args.calls), desc="python tool vs bare subprocess"):
        start = time.perf_counter()
        observation = tool(code=args.code)
        tool_ms.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        bare = subprocess.run([sys.executable, "-c", args.code], capture_output=True, text=True)
        bare_ms.append((time.perf_counter() - start) * 1000)
        assert observation == "[stdout]\n" + bare.stdout.rstrip("\n"), (observation, bare.stdout)

    report = {
        "bench": "python_tool",
        "calls": args.calls,
        "code": args.code,
        "host": platform.node(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "loadavg_1m_after": os.getloadavg()[0],  # the machine is shared: read figures against it
        "isolation": {
            "network": first.network_isolation,
            "fs": first.fs_isolation,
            "process_cap": first.process_cap,
            "layers": list(first.layers),
        },
        "python_tool": summary(tool_ms),
        "bare_subprocess": summary(bare_ms),
    }
    report["ratio_p50"] = report["python_tool"]["p50_ms"] / report["bare_subprocess"]["p50_ms"]
    report["ratio_p99"] = report["python_tool"]["p99_ms"] / report["bare_subprocess"]["p99_ms"]
    report["target_p50_ms"] = 150.0
    report["meets_target"] = report["python_tool"]["p50_ms"] < 150.0

    print(
        f"isolation: {', '.join(first.layers)}   load average (1 min): {report['loadavg_1m_after']:.1f} "
        f"on {report['cpus']} CPUs"
    )
    for name in ("python_tool", "bare_subprocess"):
        s = report[name]
        print(
            f"{name:16s} p50 {s['p50_ms']:7.1f} ms   p99 {s['p99_ms']:7.1f} ms   mean {s['mean_ms']:7.1f} ms"
        )
    print(
        f"ratio tool/bare   p50 {report['ratio_p50']:.2f}x   p99 {report['ratio_p99']:.2f}x   "
        f"(target p50 < 150 ms: {'met' if report['meets_target'] else 'NOT met'})"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "python_tool.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
