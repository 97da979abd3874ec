"""fleet_pandas.py — the baseline for bench_fleet.sh: pandas read_csv and the
same group-bys as `faultline fleet analyze` (job mix by GPU bucket, terminal
states by scale, queue-delay quantiles by scale, the NODE_FAIL MTBF
population), printed as JSON so the script can check that both agree.

    python fleet_pandas.py JOBS.csv MIN_GPUS
"""
import json
import sys

import numpy as np
import pandas as pd

path, min_gpus = sys.argv[1], int(sys.argv[2])
df = pd.read_csv(path)
t = {c: pd.to_datetime(df[c], utc=True, format="%Y-%m-%d %H:%M:%S%z") for c in ("submit_time", "start_time", "end_time")}
dur = (t["end_time"] - t["start_time"]).dt.total_seconds()
queue = (t["start_time"] - t["submit_time"]).dt.total_seconds()
df["gpu_hours"] = df["gpu_num"] * dur / 3600
df["queue_s"] = queue
edges = [-1, 0, 1, 8, 64, 255, 1023, np.inf]
names = ["0", "1", "2-8", "9-64", "65-255", "256-1023", "1024+"]
df["bucket"] = pd.cut(df["gpu_num"], edges, labels=names)
mix = df.groupby("bucket", observed=False).agg(jobs=("job_id", "size"), gpu_hours=("gpu_hours", "sum"))
states = df.groupby(["bucket", "state"], observed=True)["gpu_hours"].agg(["size", "sum"])
q = df.groupby("bucket", observed=True)["queue_s"].quantile([0.5, 0.9, 0.99]).unstack()
pop = df[(df["gpu_num"] >= min_gpus)]
out = {
    "jobs": int(len(df)),
    "gpu_hours": float(df["gpu_hours"].sum()),
    "mix": {b: [int(r.jobs), float(r.gpu_hours)] for b, r in mix.iterrows()},
    "states": {f"{b}/{s}": [int(r["size"]), float(r["sum"])] for (b, s), r in states.iterrows()},
    "queue_p50": {b: float(v) for b, v in q[0.5].items()},
    "queue_p99": {b: float(v) for b, v in q[0.99].items()},
    "at_risk_gpu_hours": float(pop["gpu_hours"].sum()),
    "failures": int((pop["state"] == "NODE_FAIL").sum()),
}
print(json.dumps(out))
