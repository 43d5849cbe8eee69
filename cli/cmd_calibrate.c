/* cli/cmd_calibrate.c - `herd calibrate`: measure a real engine's links
 * with ping-pong sweeps, fit latency (alpha) and bandwidth (beta) per link
 * class (intra-node, inter-node) by least squares on relative error,
 * check the fit against a ring all_reduce, and write the cluster section
 * of a scenario so the simulator predicts with measured parameters. With
 * --comm-cpu it also measures what communication costs compute on this
 * CPU backend (cluster.comm_cpu_slowdown): a fixed amount of work alone,
 * then beside all_reduces that a second thread runs, as gloo's threads
 * and the kernel's TCP stack run beside a training process's compute;
 * and the other way round, what the work costs those all_reduces against
 * the same all_reduce alone (cluster.compute_comm_slowdown).
 *
 * It is a herd program: run it under `herd launch` or `herd testbed run`
 * (every rank runs it; rank 0 reports). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/stats.h"

#define CAL_MAX_SIZES 20
#define CAL_HOST_LEN 64

typedef struct cal_fit {
    int have;
    int peer; /* rank measured against rank 0 */
    int nsizes;
    double bytes[CAL_MAX_SIZES];
    double secs[CAL_MAX_SIZES]; /* median one-way time */
    double alpha, beta;         /* seconds, bytes/second */
    double burst;               /* bytes passed at once (token bucket) */
    double max_resid;           /* max |fit - meas| / meas */
} cal_fit_t;

typedef struct cal_args {
    uint64_t max_bytes;
    int iters;
    const char *out_path;
    int nodes, ppn; /* found by the run */
    cal_fit_t intra, inter;
    double ar_bytes, ar_meas, ar_pred; /* ring all_reduce check */
    double beta_duplex; /* bandwidth the ring saw, sending and receiving */
    int nring;
    double ring_bytes[CAL_MAX_SIZES], ring_secs[CAL_MAX_SIZES];
    int comm_cpu;                   /* --comm-cpu: measure the slowdowns */
    double work_alone, work_beside; /* medians over ranks, seconds */
    double slowdown;                /* mean over ranks of beside/alone - 1 */
    double ar_alone, ar_beside;     /* the all_reduce alone / beside work */
    double ar_bytes_beside;         /* of that all_reduce */
    double net_slowdown;            /* mean over ranks of those - 1 */
    int status;
} cal_args_t;

/* Median one-way time of `iters` round trips of `bytes` between rank 0
 * and `peer`; other ranks return 0 at once. */
static double pingpong(herd_comm_t *w, int peer, char *buf, uint64_t bytes,
                       int iters)
{
    int me = herd_comm_rank(w);
    double t[64];
    if (me != 0 && me != peer)
        return 0;
    int other = me == 0 ? peer : 0;
    for (int i = 0; i < iters + 1; i++) {
        uint64_t t0 = herd_now(w);
        if (me == 0) {
            herd_send(w, buf, bytes, HERD_UINT8, other, 7, NULL);
            herd_recv(w, buf, bytes, HERD_UINT8, other, 7, NULL);
        } else {
            herd_recv(w, buf, bytes, HERD_UINT8, other, 7, NULL);
            herd_send(w, buf, bytes, HERD_UINT8, other, 7, NULL);
        }
        if (i > 0) /* the first round trip also opens the connection */
            t[i - 1] = (herd_now(w) - t0) * 1e-9 / 2;
    }
    return core_median_upper(t, (size_t)iters);
}

/* A token bucket below this is not reported: noise in the intercept of
 * a fast link's fit looks like a small one, and would change nothing. */
#define CAL_MIN_BURST 65536.0

/* The model's one-way time of `bytes` (sim/net: a bucket's bytes pass at
 * once, the rest at beta). */
static double fit_time(const cal_fit_t *f, double bytes)
{
    return f->alpha + (bytes > f->burst ? bytes - f->burst : 0) / f->beta;
}

/* Hockney's two regimes: alpha from the small messages (< 64 KiB, whose
 * time is latency: their median, as a bucket that back-to-back round
 * trips drained slows some of them), beta from an ordinary least-squares
 * slope over the large ones (>= 1 MiB, whose time is bandwidth). A fit
 * weighted over all sizes lets the many small points pick the slope, so
 * the two regimes are fitted apart and the residuals over every size are
 * reported. A shaped link's token bucket (tbf on the testbed, a cloud
 * NIC's shaping) passes its first bytes at line rate after the reply's
 * idle time, which moves the large messages' line down: it crosses zero
 * burst / beta below alpha, which gives the burst. */
static void fit(cal_fit_t *f)
{
    double small[CAL_MAX_SIZES], sx = 0, sy = 0, sxx = 0, sxy = 0;
    int na = 0, nb = 0;
    for (int i = 0; i < f->nsizes; i++) {
        double x = f->bytes[i], y = f->secs[i];
        if (x < 65536)
            small[na++] = y;
        if (x >= 1048576 || i >= f->nsizes - 2)
            sx += x, sy += y, sxx += x * x, sxy += x * y, nb++;
    }
    double den = nb * sxx - sx * sx;
    double slope = den > 0 ? (nb * sxy - sx * sy) / den : 0;
    f->alpha = core_median(small, (size_t)na);
    f->beta = slope > 0 ? 1.0 / slope : INFINITY;
    double cross = nb ? (sy - slope * sx) / nb : f->alpha;
    f->burst = 0;
    if (slope > 0 && (f->alpha - cross) * f->beta >= CAL_MIN_BURST)
        f->burst = floor((f->alpha - cross) * f->beta);
    f->max_resid = 0;
    for (int i = 0; i < f->nsizes; i++) {
        double r = fabs(fit_time(f, f->bytes[i]) - f->secs[i]) / f->secs[i];
        if (r > f->max_resid)
            f->max_resid = r;
    }
}

static void measure(herd_comm_t *w, cal_fit_t *f, char *buf, cal_args_t *a)
{
    f->nsizes = 0;
    for (uint64_t b = 8; f->nsizes < CAL_MAX_SIZES; b *= 4) {
        if (b > a->max_bytes)
            b = a->max_bytes;
        f->bytes[f->nsizes] = (double)b;
        f->secs[f->nsizes] = pingpong(w, f->peer, buf, b, a->iters);
        f->nsizes++;
        if (b == a->max_bytes)
            break;
    }
    if (herd_comm_rank(w) == 0)
        fit(f);
    f->have = 1;
}

/* Host identity: hostname plus the testbed's per-host address. */
static void host_id(char *id)
{
    char host[CAL_HOST_LEN / 2] = "";
    const char *addr = getenv("HERD_HOST_ADDR");
    gethostname(host, sizeof(host) - 1);
    memset(id, 0, CAL_HOST_LEN);
    snprintf(id, CAL_HOST_LEN, "%s|%s", host, addr ? addr : "");
}

/* Find the first rank sharing rank 0's host and the first that does not;
 * count nodes and ranks per node. */
static void topology(herd_comm_t *w, cal_args_t *a, char *ids)
{
    int p = herd_comm_size(w);
    a->intra.peer = a->inter.peer = -1;
    a->nodes = 0;
    for (int r = 0; r < p; r++) {
        int first = 1;
        for (int q = 0; q < r; q++)
            if (!strcmp(ids + q * CAL_HOST_LEN, ids + r * CAL_HOST_LEN))
                first = 0;
        a->nodes += first;
        int same = !strcmp(ids, ids + r * CAL_HOST_LEN);
        if (r > 0 && same && a->intra.peer < 0)
            a->intra.peer = r;
        if (!same && a->inter.peer < 0)
            a->inter.peer = r;
    }
    a->ppn = p / (a->nodes ? a->nodes : 1);
}

/* One ring all_reduce size: median time over iters (after a warm-up). */
static double ring_time(herd_comm_t *w, char *buf, uint64_t count, int iters)
{
    double t[64];
    herd_all_reduce(w, buf, buf, count, HERD_FLOAT32, HERD_SUM, NULL);
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = herd_now(w);
        herd_all_reduce(w, buf, buf, count, HERD_FLOAT32, HERD_SUM, NULL);
        t[i] = (herd_now(w) - t0) * 1e-9;
    }
    return core_median_upper(t, (size_t)iters);
}

/* A ring all_reduce sweep (max/64 .. max): the bandwidth collectives see
 * when every rank sends and receives at once is the slope of time
 * against 2(p-1)/p * n once the latency term 2(p-1)alpha is taken off
 * (least squares through the origin). The p2p fit's prediction of the
 * largest size is kept as a check. */
static void check_ring(herd_comm_t *w, cal_args_t *a, char *buf)
{
    int p = herd_comm_size(w);
    const cal_fit_t *f = a->inter.have ? &a->inter : &a->intra;
    double lat = 2.0 * (p - 1) * f->alpha, sxy = 0, sxx = 0;
    herd_comm_set_algo(w, HERD_COLL_ALL_REDUCE, HERD_ALGO_RING);
    a->nring = 0;
    for (uint64_t b = a->max_bytes / 64; b <= a->max_bytes; b *= 4) {
        uint64_t count = b / 4 / (uint64_t)p * (uint64_t)p;
        if (count == 0 || a->nring >= CAL_MAX_SIZES)
            continue;
        double t = ring_time(w, buf, count, a->iters);
        double x = 2.0 * (p - 1) / p * (double)count * 4;
        a->ring_bytes[a->nring] = (double)count * 4;
        a->ring_secs[a->nring++] = t;
        sxy += x * (t - lat), sxx += x * x;
        a->ar_bytes = (double)count * 4;
        a->ar_meas = t;
    }
    a->ar_pred = 2.0 * (p - 1) * (f->alpha + a->ar_bytes / p / f->beta);
    a->beta_duplex = sxy > 0 ? sxx / sxy : 0;
}

/* The fixed work: passes over an 8 MiB array (memory traffic, as
 * training compute has), timed on the wall clock. herd_compute would not
 * do: it spins for a duration, so it cannot be slowed. */
#define CAL_WORK_DOUBLES (1u << 20)

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double work(double *v, long passes)
{
    double t0 = wall_s();
    for (long p = 0; p < passes; p++)
        for (size_t i = 0; i < CAL_WORK_DOUBLES; i++)
            v[i] = v[i] * 0.999999 + 1e-9 * (double)i;
    return wall_s() - t0;
}

typedef struct cal_comm_job {
    herd_comm_t *w;
    char *buf;
    uint64_t count;
    long n;
} cal_comm_job_t;

/* The comm thread: n blocking all_reduces (the main thread makes no herd
 * call meanwhile, so the communicator is this thread's alone). */
static void *comm_thread(void *arg)
{
    cal_comm_job_t *j = arg;
    for (long i = 0; i < j->n; i++)
        herd_all_reduce(j->w, j->buf, j->buf, j->count, HERD_FLOAT32, HERD_SUM,
                        NULL);
    return NULL;
}

typedef struct cal_work_job {
    double *v;
    volatile int stop; /* set by the main thread, read here: a flag only */
} cal_work_job_t;

/* The work thread: passes until told to stop. */
static void *work_thread(void *arg)
{
    cal_work_job_t *j = arg;
    while (!j->stop)
        work(j->v, 1);
    return NULL;
}

/* n timed all_reduces of count floats into t[0..n). */
static void timed_all_reduces(herd_comm_t *w, char *buf, uint64_t count, long n,
                              double *t)
{
    for (long i = 0; i < n; i++) {
        double t0 = wall_s();
        herd_all_reduce(w, buf, buf, count, HERD_FLOAT32, HERD_SUM, NULL);
        t[i] = wall_s() - t0;
    }
}

/* The ring sweep's largest size that took at most 0.1 s (its smallest
 * when none did), so that the measurement below takes about a second on
 * a slow link too; rank 0's choice. */
static int beside_size(herd_comm_t *w, const cal_args_t *a)
{
    int64_t k = a->nring - 1;
    while (k > 0 && a->ring_secs[k] > 0.1)
        k--;
    herd_broadcast(w, &k, 1, HERD_INT64, 0, NULL);
    return (int)k;
}

/* An all_reduce shorter than this beside the work mostly measures a
 * wake-up that waits for a core (milliseconds on a busy machine), not a
 * slower rate: no compute_comm_slowdown is measured from it. */
#define CAL_BESIDE_MIN_S 0.02
/* All_reduces per round beside the work at most (about 0.2 s of them). */
#define CAL_BESIDE_MAX_N 64

/* --comm-cpu, the other way round: what compute costs communication
 * (cluster.compute_comm_slowdown). Three rounds of n all_reduces (of
 * beside_size) alone, then n while a second thread does the work all
 * along (it stops only after the last one); the median of every
 * all_reduce beside the work over the median alone, minus one. The
 * rounds interleave so that drift of the machine's load falls on both. */
static double comm_beside_work(herd_comm_t *w, cal_args_t *a, char *buf,
                               double *v, double *alone_out)
{
    if (!a->nring) /* every rank ran the same sweep */
        return 0;
    int p = herd_comm_size(w), k = beside_size(w, a);
    double ar = a->ring_secs[k];
    /* rank 0's sweep decides the go and the count for all */
    int64_t n = ar >= CAL_BESIDE_MIN_S ? (int64_t)ceil(0.2 / ar) : 0;
    n = n == 0 ? 0 : n < 3 ? 3 : n > CAL_BESIDE_MAX_N ? CAL_BESIDE_MAX_N : n;
    herd_broadcast(w, &n, 1, HERD_INT64, 0, NULL);
    if (!n)
        return 0;
    uint64_t count = (uint64_t)a->ring_bytes[k] / 4 / (uint64_t)p * (uint64_t)p;
    a->ar_bytes_beside = (double)count * 4;
    /* on the stack: a rank whose allocation failed would skip the
     * collectives the others run, and they would wait for it */
    double al[3 * CAL_BESIDE_MAX_N], bs[3 * CAL_BESIDE_MAX_N];
    for (int i = 0; i < 3; i++) {
        herd_barrier(w, NULL);
        timed_all_reduces(w, buf, count, n, al + i * n);
        cal_work_job_t j = {v, 0};
        pthread_t th;
        herd_barrier(w, NULL);
        int started = pthread_create(&th, NULL, work_thread, &j) == 0;
        timed_all_reduces(w, buf, count, n, bs + i * n);
        j.stop = 1;
        if (started)
            pthread_join(th, NULL);
    }
    *alone_out = core_median(al, (size_t)(3 * n));
    return core_median(bs, (size_t)(3 * n));
}

/* --comm-cpu: the same work alone and beside all_reduces of the largest
 * ring size, enough of them to outlast the work by half; every rank
 * measures its own ratio, rank 0 reports the mean. */
static void comm_cpu(herd_comm_t *w, cal_args_t *a, char *buf)
{
    int p = herd_comm_size(w);
    double *v = calloc(CAL_WORK_DOUBLES, sizeof(double));
    if (!v)
        return;
    /* passes for about 0.2 s alone, decided by rank 0 */
    work(v, 1); /* the pages touched, the caches warm */
    double one = work(v, 1);
    int64_t passes = one > 0 ? (int64_t)(0.2 / one) + 1 : 1;
    herd_broadcast(w, &passes, 1, HERD_INT64, 0, NULL);
    double t[3];
    for (int i = 0; i < 3; i++) {
        herd_barrier(w, NULL);
        t[i] = work(v, passes);
    }
    double alone = core_median(t, 3);
    double ar = a->nring ? a->ring_secs[a->nring - 1] : 0.05;
    uint64_t count =
        a->nring ? (uint64_t)a->ring_bytes[a->nring - 1] / 4 : 1024;
    int64_t n = (int64_t)ceil(1.5 * alone / (ar > 0 ? ar : 0.05)) + 1;
    herd_broadcast(w, &n, 1, HERD_INT64, 0, NULL);
    for (int i = 0; i < 3; i++) {
        cal_comm_job_t j = {w, buf, count / (uint64_t)p * (uint64_t)p, n};
        pthread_t th;
        herd_barrier(w, NULL);
        int started = pthread_create(&th, NULL, comm_thread, &j) == 0;
        t[i] = work(v, passes);
        if (started)
            pthread_join(th, NULL);
        else
            comm_thread(&j);
    }
    double beside = core_median(t, 3), ar_alone = 0;
    double ar_beside = comm_beside_work(w, a, buf, v, &ar_alone);
    /* means over ranks: what communication costs compute, and what
     * compute costs communication (comm_cpu_slowdown,
     * compute_comm_slowdown) */
    double r[6] = {
        alone,    beside,    beside / alone - 1,
        ar_alone, ar_beside, ar_alone > 0 ? ar_beside / ar_alone - 1 : 0};
    herd_all_reduce(w, r, r, 6, HERD_FLOAT64, HERD_SUM, NULL);
    a->work_alone = r[0] / p;
    a->work_beside = r[1] / p;
    a->slowdown = r[2] / p > 0 ? r[2] / p : 0;
    a->ar_alone = r[3] / p;
    a->ar_beside = r[4] / p;
    a->net_slowdown = r[5] / p > 0 ? r[5] / p : 0;
    free(v);
}

static int cal_main(herd_comm_t *w, void *arg)
{
    cal_args_t *a = arg;
    int p = herd_comm_size(w);
    char *ids = calloc((size_t)p, CAL_HOST_LEN), me[CAL_HOST_LEN];
    char *buf = calloc(1, a->max_bytes);
    if (!ids || !buf) {
        free(ids);
        free(buf);
        return 1;
    }
    host_id(me);
    herd_all_gather(w, me, ids, CAL_HOST_LEN, HERD_UINT8, NULL);
    topology(w, a, ids);
    if (a->intra.peer > 0)
        measure(w, &a->intra, buf, a);
    if (a->inter.peer > 0)
        measure(w, &a->inter, buf, a);
    herd_barrier(w, NULL);
    if (p > 1)
        check_ring(w, a, buf);
    if (p > 1 && a->comm_cpu)
        comm_cpu(w, a, buf);
    free(ids);
    free(buf);
    return 0;
}

static void fmt_bw(double bps, char *buf, size_t len)
{
    if (bps >= 1e9)
        snprintf(buf, len, "%.3fGB/s", bps / 1e9);
    else
        snprintf(buf, len, "%.3fMB/s", bps / 1e6);
}

/* The ping-pong fit is what the link carries one way; the ring sweep's
 * duplex bandwidth is reported beside it as a check. On a loaded machine
 * the ring sweep (every rank sending and receiving at once) was the more
 * noise-sensitive of the two, and predictions from the ping-pong fit
 * matched measured collectives better (docs/testbed.md). */
static void write_link(FILE *f, const char *name, const cal_fit_t *c,
                       double duplex)
{
    char bw[32];
    if (duplex > 0)
        fprintf(f, "  # %s: ring all_reduce sweep saw %.3f MB/s (duplex)\n",
                name, duplex / 1e6);
    if (!isfinite(c->beta)) {
        /* the largest sizes took no longer than the smaller ones (a link
         * faster than the sweep can tell, e.g. loopback with a small -e):
         * "infGB/s" would not load, so the link keeps the defaults */
        fprintf(f,
                "  # %s: no bandwidth fitted (time did not grow with size; "
                "a larger -e tells), latency %.2fus\n",
                name, c->alpha * 1e6);
        return;
    }
    fmt_bw(c->beta, bw, sizeof(bw));
    fprintf(f, "  %s: {bandwidth: %s, latency: %.2fus", name, bw,
            c->alpha * 1e6);
    /* token buckets are modelled on the inter-node links */
    if (c->burst > 0 && !strcmp(name, "inter"))
        fprintf(f, ", burst: %.0fB", c->burst);
    fputs("}\n", f);
}

static void report(const cal_args_t *a, FILE *out, FILE *log, int p)
{
    const cal_fit_t *cls[2] = {&a->intra, &a->inter};
    const char *names[2] = {"intra", "inter"};
    for (int k = 0; k < 2; k++) {
        if (!cls[k]->have)
            continue;
        fprintf(log,
                "# %s (rank 0 <-> rank %d): alpha %.2f us, beta %.2f MB/s, "
                "burst %.0f B, max residual %.1f%%\n",
                names[k], cls[k]->peer, cls[k]->alpha * 1e6, cls[k]->beta / 1e6,
                cls[k]->burst, cls[k]->max_resid * 100);
        for (int i = 0; i < cls[k]->nsizes; i++)
            fprintf(log, "#   %10.0f B  measured %10.2f us  fit %10.2f us\n",
                    cls[k]->bytes[i], cls[k]->secs[i] * 1e6,
                    fit_time(cls[k], cls[k]->bytes[i]) * 1e6);
    }
    if (p > 1)
        fprintf(log,
                "# check: ring all_reduce of %.0f B: measured %.2f ms, "
                "alpha-beta closed form %.2f ms (%+.1f%%)\n",
                a->ar_bytes, a->ar_meas * 1e3, a->ar_pred * 1e3,
                (a->ar_pred - a->ar_meas) / a->ar_meas * 100);
    if (p > 1)
        fprintf(log, "# duplex bandwidth fitted to the ring sweep: %.3f MB/s\n",
                a->beta_duplex / 1e6);
    const cal_fit_t *f = a->inter.have ? &a->inter : &a->intra;
    for (int i = 0; i < a->nring; i++) {
        double pred =
            2.0 * (p - 1) * (f->alpha + a->ring_bytes[i] / p / f->beta);
        fprintf(
            log,
            "#   ring %10.0f B  measured %10.3f ms  ping-pong fit %10.3f ms "
            "(%+.1f%%)\n",
            a->ring_bytes[i], a->ring_secs[i] * 1e3, pred * 1e3,
            (pred - a->ring_secs[i]) / a->ring_secs[i] * 100);
    }
    fprintf(out,
            "# herd calibrate: %d ranks, %d node(s) x %d, ping-pong "
            "8 B .. %.0f B\ncluster:\n  nodes: %d\n  gpus_per_node: %d\n",
            p, a->nodes, a->ppn,
            cls[0]->have ? cls[0]->bytes[cls[0]->nsizes - 1]
                         : cls[1]->bytes[cls[1]->nsizes - 1],
            a->nodes, a->ppn);
    if (a->comm_cpu) {
        fprintf(log,
                "# comm cpu: %.1f ms of work alone, %.1f ms beside ring "
                "all_reduces (mean over ranks): slowdown %.3f\n",
                a->work_alone * 1e3, a->work_beside * 1e3, a->slowdown);
        if (a->ar_alone > 0)
            fprintf(log,
                    "# comm cpu: the all_reduce of %.0f B %.2f ms alone, %.2f "
                    "ms beside the work (mean over ranks): slowdown %.3f\n",
                    a->ar_bytes_beside, a->ar_alone * 1e3, a->ar_beside * 1e3,
                    a->net_slowdown);
        else
            fprintf(log,
                    "# comm cpu: compute_comm_slowdown not measured: the "
                    "ring sweep's all_reduces took under %.0f ms (a larger "
                    "-e tells)\n",
                    CAL_BESIDE_MIN_S * 1e3);
        /* a scenario takes 0..100 (an all_reduce of a few microseconds
         * on loopback can wait a whole scheduler slice beside the work:
         * that is latency, not a rate, and the cap says "very slow") */
        fprintf(out, "  comm_cpu_slowdown: %.3f\n", fmin(a->slowdown, 100));
        fprintf(out, "  compute_comm_slowdown: %.3f\n",
                fmin(a->net_slowdown, 100));
    }
    /* The ring crosses the slowest class: inter when there are 2+ nodes. */
    int ring_cls = a->inter.have ? 1 : 0;
    for (int k = 0; k < 2; k++)
        if (cls[k]->have)
            write_link(out, names[k], cls[k],
                       k == ring_cls && p > 1 ? a->beta_duplex : 0);
}

static const char usage[] =
    "usage: herd calibrate [--engine tcp|nccl] [-e MAXBYTES] [-n ITERS] "
    "[--comm-cpu] [-o FILE]\n"
    "Run under `herd launch` or `herd testbed run` (>= 2 ranks). Measures\n"
    "ping-pong between rank 0 and a rank on its node (intra) and on another\n"
    "node (inter) from 8 B to MAXBYTES (default 16MiB), fits latency and\n"
    "bandwidth per link class (weighted least squares, residuals printed),\n"
    "checks the fit against a ring all_reduce, and writes the cluster\n"
    "section of a scenario to FILE (default: stdout). --comm-cpu also\n"
    "measures fixed work alone and beside all_reduces run by a second\n"
    "thread (CPU backends), and the all_reduces beside the work against\n"
    "alone, and writes cluster.comm_cpu_slowdown and\n"
    "cluster.compute_comm_slowdown.\n"
    "       herd calibrate --from LOG... fits nccl-tests output instead\n"
    "(see herd calibrate --from --help).\n";

static int parse(int argc, char **argv, const char **engine, cal_args_t *a)
{
    for (int i = 1; i < argc; i++) {
        long v;
        if (!strcmp(argv[i], "--engine") && i + 1 < argc)
            *engine = argv[++i];
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) {
            if (cli_parse_bytes(argv[++i], &a->max_bytes) ||
                a->max_bytes < 64 || a->max_bytes > (1ull << 30))
                return cli_usage_error("calibrate", "-e must be 64B..1GiB");
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], 1, 64, &v))
                return cli_usage_error("calibrate", "-n must be 1..64");
            a->iters = (int)v;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            a->out_path = argv[++i];
        else if (!strcmp(argv[i], "--comm-cpu"))
            a->comm_cpu = 1;
        else
            return cli_usage_error("calibrate", "unknown option '%s'", argv[i]);
    }
    return 0;
}

int cli_calibrate_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--from"))
            return cli_calibrate_from_main(argc, argv);
    if (cli_wants_help(argc, argv, usage))
        return 0;
    const char *engine = "tcp";
    cal_args_t a = {.max_bytes = 16u << 20, .iters = 5};
    int rc = parse(argc, argv, &engine, &a);
    if (rc || (rc = cli_engine_resolve("calibrate", engine, &engine)))
        return rc;
    if (!strcmp(engine, "sim"))
        return cli_usage_error("calibrate", "measures a real engine: use "
                                            "--engine tcp or nccl");
    herd_init_t init = {.backend = engine, .timeout_s = 120};
    herd_comm_t *w = NULL;
    herd_status_t st = herd_comm_create(&init, &w);
    if (st != HERD_OK) {
        fprintf(stderr,
                "herd calibrate: cannot start the %s engine: %s "
                "(run under herd launch or herd testbed run)\n",
                engine, herd_status_string(st));
        return 1;
    }
    int p = herd_comm_size(w), me = herd_comm_rank(w);
    if (p < 2) {
        herd_comm_destroy(w);
        return cli_usage_error("calibrate", "needs at least 2 ranks");
    }
    rc = cal_main(w, &a);
    herd_comm_destroy(w);
    if (rc || me != 0)
        return rc;
    FILE *out = a.out_path ? fopen(a.out_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "herd calibrate: cannot write %s\n", a.out_path);
        return 1;
    }
    report(&a, out, stderr, p);
    if (out != stdout)
        fclose(out);
    return 0;
}
