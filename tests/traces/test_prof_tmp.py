import sys, time, cProfile, pstats
sys.path.insert(0, 'bench')
import otlp_cases
from webapp.core.importers import otlp
from webapp.traces import services

def test_prof(project):
    case = otlp_cases.CASES["fanout-33k"](0)
    reqs = otlp_cases.requests(case, 500)
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    for i, r in enumerate(reqs):
        t = time.perf_counter()
        if i in (30, 60): pr.enable()
        for tid, spans in otlp.decode_protobuf(r.SerializeToString()).items():
            res = services.do_ingest_spans(project, otlp, tid, spans, "x")
        if i in (30, 60): pr.disable()
        print("request", i, round(time.perf_counter() - t, 2), res.events_added, res.events_updated, flush=True)
    print("total", time.perf_counter() - t0)
    pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
