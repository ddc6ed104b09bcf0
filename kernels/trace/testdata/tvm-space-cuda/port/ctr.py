"""NRM and SFM sketches: AutoInline, CrossThreadReduction, ParallelizeVectorizeUnroll and
AutoBind of TVM v0.20 (see ../README.md), written out per sketch."""
from mlt import T, Raw, unroll

P8 = "0.125"
P6 = "0.16666666666666665741"
CTR = [[4, 8, 16, 32, 64, 128, 256, 512], [Raw(P8)] * 8]

def bind_cands(extent):
    c = [e for e in [32, 64, 128, 256, 512, 1024] if e <= min(extent, 1024)]
    return c

def get_blocks(t, names):
    return {n: t.add("GetBlock", [], [n, "main"], t.rv("b"))[0] for n in names + ["root"]}

def autobind_spatial(t, b, nloops, nfuse, extent, dec):
    """BindBlockThreadIdx on a block with no thread binding: fuse the leading spatial loops, split, bind."""
    ls = t.add("GetLoops", [b], [], t.rv("l", nloops))
    f = t.add("Fuse", ls[:nfuse], [1], t.rv("l"))[0]
    c = bind_cands(extent)
    if len(c) > 1:
        p = {4: "0.25", 6: P6}[len(c)]
        factor = t.add("SampleCategorical", [], [c, [Raw(p)] * len(c)], t.rv("v"), dec=dec)[0]
    else:
        factor = Raw(str(c[0] if c else extent))
    s = t.add("Split", [f, "None", factor], [1, 0], t.rv("l", 2))
    t.add("Bind", [s[0]], ["blockIdx.x"], [])
    t.add("Bind", [s[1]], ["threadIdx.x"], [])

def autobind_thread_bound(t, b, nloops, nfuse):
    """BindBlockThreadIdx on a block with threadIdx bound but not blockIdx."""
    t.add("GetLoops", [b], [], t.rv("l", nloops))
    ls = t.add("GetLoops", [b], [], t.rv("l", nloops))
    f = t.add("Fuse", ls[:nfuse], [1], t.rv("l"))[0]
    t.add("Bind", [f], ["blockIdx.x"], [])

def nrm(i, dec):
    t = T()
    b = get_blocks(t, ["C", "D"])
    if i == 0:
        unroll(t, b["root"], dec[0])
        autobind_spatial(t, b["D"], 1, 1, 1, None)
        autobind_spatial(t, b["C"], 3, 1, 1, None)
        return t
    # CrossThreadReduction on C, fusible into D.
    # The target block is the consumer RV GetConsumers returns (TVM's
    # consumers[0]); AutoBind later uses the collected RV of D.
    cons = t.add("GetConsumers", [b["C"]], [], t.rv("b"))
    d = b["D"]
    tgt = t.add("GetLoops", [cons[0]], [], t.rv("l"))
    t.add("GetLoops", [b["C"]], [], t.rv("l", 3))
    v = t.add("SampleCategorical", [], CTR, t.rv("v"), dec=dec[0])[0]
    t.add("GetLoops", [cons[0]], [], t.rv("l"))  # InThreadScope
    s = t.add("Split", [tgt[0], "None", v], [1, 0], t.rv("l", 2))
    t.add("Bind", [s[1]], ["threadIdx.x"], [])
    t.add("ComputeAt", [b["C"], s[0]], [1, -1], [])
    t.add("SetScope", [b["C"]], [0, "shared"], [])
    ls = t.add("GetLoops", [b["C"]], [], t.rv("l", 4))
    f = t.add("Fuse", ls[2:], [1], t.rv("l"))[0]
    s2 = t.add("Split", [f, "None", v], [1, 0], t.rv("l", 2))
    t.add("Bind", [s2[1]], ["threadIdx.x"], [])
    unroll(t, b["root"], dec[1])
    autobind_thread_bound(t, d, 2, 1)
    return t

def sfm(i, dec):
    t = T()
    b = get_blocks(t, ["T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum", "T_softmax_norm"])
    mx, ex, es, nm = b["T_softmax_maxelem"], b["T_softmax_exp"], b["T_softmax_expsum"], b["T_softmax_norm"]
    t.add("ComputeInline", [ex], [], [])
    d = iter(dec)
    ctr_es = i in (2, 3)
    ctr_mx = i in (1, 3)
    v = None
    if ctr_es:
        cons = t.add("GetConsumers", [es], [], t.rv("b"))
        tgt = t.add("GetLoops", [cons[0]], [], t.rv("l", 2))
        t.add("GetLoops", [es], [], t.rv("l", 2))
        v = t.add("SampleCategorical", [], CTR, t.rv("v"), dec=next(d))[0]
        t.add("GetLoops", [cons[0]], [], t.rv("l", 2))  # InThreadScope
        s = t.add("Split", [tgt[1], "None", v], [1, 0], t.rv("l", 2))
        t.add("Bind", [s[1]], ["threadIdx.x"], [])
        t.add("ComputeAt", [es, tgt[0]], [1, -1], [])
        t.add("SetScope", [es], [0, "shared"], [])
        ls = t.add("GetLoops", [es], [], t.rv("l", 3))
        s = t.add("Split", [ls[2], "None", v], [1, 0], t.rv("l", 2))
        t.add("Bind", [s[1]], ["threadIdx.x"], [])
    if ctr_mx and ctr_es:
        cons = t.add("GetConsumers", [mx], [], t.rv("b", 2))
        tgt = t.add("GetLoops", [cons[0]], [], t.rv("l", 4))
        t.add("GetLoops", [mx], [], t.rv("l", 2))
        t.add("SampleCategorical", [], CTR, t.rv("v"), dec=next(d))
        t.add("GetLoops", [cons[0]], [], t.rv("l", 4))  # InThreadScope: yes, reuse v
        t.add("ComputeAt", [mx, tgt[0]], [1, -1], [])
        t.add("SetScope", [mx], [0, "shared"], [])
        ls = t.add("GetLoops", [mx], [], t.rv("l", 3))
        s = t.add("Split", [ls[2], "None", v], [1, 0], t.rv("l", 2))
        t.add("Bind", [s[1]], ["threadIdx.x"], [])
    elif ctr_mx:
        # Not fusible: two consumers whose lowest common ancestor is the root block.
        t.add("GetConsumers", [mx], [], t.rv("b", 2))
        w = t.add("SampleCategorical", [], CTR, t.rv("v"), dec=next(d))[0]
        ls = t.add("GetLoops", [mx], [], t.rv("l", 2))
        s = t.add("Split", [ls[1], "None", w], [1, 0], t.rv("l", 2))
        t.add("Bind", [s[1]], ["threadIdx.x"], [])
    unroll(t, b["root"], next(d))
    # AutoBind: root (skipped), norm, expsum, exp (inlined), maxelem.
    if ctr_es:
        autobind_thread_bound(t, nm, 3, 1)
    else:
        autobind_spatial(t, nm, 2, 2, 65536, next(d))
        autobind_spatial(t, es, 2, 1, 256, next(d))
    if ctr_mx:
        if not ctr_es:
            autobind_thread_bound(t, mx, 3, 1)
    else:
        autobind_spatial(t, mx, 2, 1, 256, next(d))
    rest = list(d)
    assert not rest, rest
    return t
