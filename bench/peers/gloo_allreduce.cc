/* bench/peers/gloo_allreduce.cc - Gloo's ring and halving-doubling
 * all_reduce (float32 sum) over the same sweep and output as
 * bench/tcp_allreduce.c. Rank and size from RANK / WORLD_SIZE (herd
 * launch sets them), rendezvous through a FileStore in GLOO_STORE_DIR:
 *
 *   GLOO_STORE_DIR=$(mktemp -d) herd launch --nproc-per-node 4 -- \
 *       bench_peer_gloo_allreduce -a ring -b 8 -e 256M
 *
 * Built only when Gloo is found; never a herd dependency. */
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <memory>
#include <vector>

#include "common.h"

using Ctx = std::shared_ptr<gloo::rendezvous::Context>;

static double run_algo(const Ctx &ctx, const peer_opts_t &o, float *x,
                       int n, int iters)
{
    std::vector<float *> ptrs{x};
    std::unique_ptr<gloo::Algorithm> a;
    if (!strcmp(o.algo, "rhd"))
        a.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, n));
    else
        a.reset(new gloo::AllreduceRing<float>(ctx, ptrs, n));
    for (int i = 0; i < o.warmup; i++)
        a->run();
    gloo::BarrierAllToAll(ctx).run();
    double t0 = peer_now_us();
    for (int i = 0; i < iters; i++)
        a->run();
    double us = (peer_now_us() - t0) / iters;
    std::vector<double *> tp{&us};
    /* max over ranks, as the other harnesses report */
    gloo::AllreduceRing<double>(ctx, tp, 1, gloo::ReductionFunction<double>::max)
        .run();
    return us;
}

int main(int argc, char **argv)
{
    peer_opts_t o;
    const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    const char *dir = getenv("GLOO_STORE_DIR");
    if (peer_parse(argc, argv, &o) != 0 || !rs || !ws || !dir) {
        fprintf(stderr, "usage: RANK=r WORLD_SIZE=p GLOO_STORE_DIR=dir "
                        "gloo_allreduce [-a ring|rhd] [-b MIN] [-e MAX] "
                        "[-f F] [-n ITERS] [-w WARMUP]\n");
        return 2;
    }
    int r = atoi(rs), p = atoi(ws);
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(r, p);
    ctx->connectFullMesh(store, dev);
    std::vector<float> x(o.max / 4 + 16, 0.0f);
    if (r == 0)
        peer_header("Gloo", p, o.algo);
    for (uint64_t b = o.min; b <= o.max; b *= (uint64_t)o.factor) {
        double us = run_algo(ctx, o, x.data(), (int)(b / 4),
                             peer_iters(&o, b));
        if (r == 0)
            peer_line(b, p, us);
    }
    return 0;
}
