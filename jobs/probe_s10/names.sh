set -x
export PYTHONPATH=$PWD
ncu --kernel-name regex:cutlass --launch-count 2 --metrics gpu__time_duration.sum -f -o $OUT/cut python3 jobs/probe_s10/convnet.py --steps 2 > $OUT/a.log 2>&1
grep -E "Profiling|WARNING" $OUT/a.log | cut -c1-200
ncu --kernel-name-base mangled --kernel-name regex:^_ZN17cutlass --launch-count 1 --metrics gpu__time_duration.sum -f -o $OUT/cut2 python3 jobs/probe_s10/convnet.py --steps 2 > $OUT/b.log 2>&1
grep -E "Profiling|WARNING" $OUT/b.log | cut -c1-200
ncu --kernel-name-base demangled --kernel-name regex:cutlass --launch-count 1 --metrics gpu__time_duration.sum -f -o $OUT/cut3 python3 jobs/probe_s10/convnet.py --steps 2 > $OUT/c.log 2>&1
grep -E "Profiling|WARNING" $OUT/c.log | cut -c1-200
python3 - <<'PY'
import os
from profkit.counters.ncu_rep import import_ncu_report
r = import_ncu_report()
for f in ("cut", "cut2", "cut3"):
    p = os.path.join(os.environ["OUT"], f + ".ncu-rep")
    if not os.path.exists(p):
        print(f, "missing"); continue
    ctx = r.load_report(p)
    for i in range(ctx.num_ranges()):
        rg = ctx.range_by_idx(i)
        for j in range(rg.num_actions()):
            a = rg.action_by_idx(j)
            for base in ("NameBase_FUNCTION", "NameBase_DEMANGLED", "NameBase_MANGLED"):
                nb = getattr(a, base, None)
                if nb is None:
                    nb = getattr(r.IAction, base)
                print(f, j, base, a.name(nb)[:160])
PY
rm -f $OUT/*.ncu-rep
