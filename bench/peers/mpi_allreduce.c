/* bench/peers/mpi_allreduce.c - Open MPI's MPI_Allreduce (float32 sum,
 * in place) over the same sweep and output as bench/tcp_allreduce.c:
 *
 *   mpirun -np 4 --mca btl tcp,self --mca btl_tcp_if_include lo \
 *       bench_peer_mpi_allreduce -b 8 -e 256M
 *
 * Built only when an MPI compiler is found; never a herd dependency. */
#include <mpi.h>

#include "common.h"

static double time_size(float *x, int n, int iters)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = peer_now_us();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double us = (peer_now_us() - t0) / iters;
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return us;
}

int main(int argc, char **argv)
{
    peer_opts_t o;
    MPI_Init(&argc, &argv);
    if (peer_parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: mpi_allreduce [-b MIN] [-e MAX] [-f F] "
                        "[-n ITERS] [-w WARMUP]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    float *x = calloc(o.max / 4 + 16, sizeof(float));
    if (r == 0)
        peer_header("Open MPI", p, "default");
    for (uint64_t b = o.min; b <= o.max; b *= (uint64_t)o.factor) {
        int n = (int)(b / 4);
        for (int i = 0; i < o.warmup; i++)
            MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        double us = time_size(x, n, peer_iters(&o, b));
        if (r == 0)
            peer_line(b, p, us);
    }
    free(x);
    MPI_Finalize();
    return 0;
}
