/* cli/cmd_compare_steps.c - `herd compare PREDICTED_STEPS MEASURED_STEPS...`:
 * step records (HERD_STEPS_DIR) of a prediction against those of a
 * measurement, per collective, algorithm, size, rank and step: when each
 * step started and ended after the rank posted the op, medians over the
 * ops, printed and written to DIR/steps.tsv. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cmd_sim.h"
#include "core/sched.h"
#include "trace/steps.h"

int cli_compare_is_steps(const char *path)
{
    return trace_steps_is_file(path);
}

static int read_all(const char *const *files, int n, trace_steps_t *s)
{
    char err[1024];
    for (int i = 0; i < n; i++)
        if (trace_steps_read(files[i], s, err, sizeof(err)) != HERD_OK) {
            fprintf(stderr, "herd compare: %s\n", err);
            return 2;
        }
    return 0;
}

static double gap(const trace_step_row_t *r)
{
    double d = r->meas_end - r->pred_end;
    return d < 0 ? -d : d;
}

/* The receive of rows[i..e) (one collective, algorithm and size) whose
 * end is furthest from its prediction; NULL when there is none. Sends are
 * left out: the tcp engine's ends when the socket takes the data, the
 * simulator's when its last byte has left, so their ends differ by design
 * (a receive ends when the data is in, on both). */
static const trace_step_row_t *widest(const trace_step_row_t *rows, size_t i,
                                      size_t e)
{
    const trace_step_row_t *w = NULL;
    for (size_t k = i; k < e; k++)
        if ((rows[k].kind == CORE_STEP_RECV ||
             rows[k].kind == CORE_STEP_RECV_REDUCE) &&
            (!w || gap(&rows[k]) > gap(w)))
            w = &rows[k];
    return w;
}

static void gaps_md(const trace_step_cmp_t *c, FILE *f)
{
    static const char *const kinds[] = {"send to", "recv from",
                                        "recv_reduce from", "copy"};
    fprintf(f, "# Step by step: where each row's steps leave the "
               "prediction\n\n"
               "Per collective, algorithm and size, the receive whose end "
               "(after its rank posted the op; medians over the ops) is "
               "furthest from the prediction (sends end when the socket "
               "takes the data on the tcp engine, when the last byte has "
               "left in the simulator: not comparable). Every step: "
               "`steps.tsv`.\n\n"
               "| collective | algorithm | size (B) | rank | step | what | "
               "predicted end (ms) | measured end (ms) | gap (ms) |\n"
               "|---|---|---:|---:|---:|---|---:|---:|---:|\n");
    for (size_t i = 0; i < c->nrows;) {
        const trace_step_row_t *r = &c->rows[i];
        size_t e = i + 1;
        while (e < c->nrows && c->rows[e].coll == r->coll &&
               c->rows[e].algo == r->algo && c->rows[e].op_bytes == r->op_bytes)
            e++;
        const trace_step_row_t *w = widest(c->rows, i, e);
        i = e;
        if (!w)
            continue;
        const char *k = w->kind >= 0 && w->kind < 4 ? kinds[w->kind] : "?";
        fprintf(f,
                "| %s | %s | %llu | %d | %u | %s %d | %.3f | %.3f | %+.3f |\n",
                herd_coll_name(w->coll), herd_algo_name(w->algo),
                (unsigned long long)w->op_bytes, w->rank, (unsigned)w->step, k,
                w->peer, w->pred_end / 1e6, w->meas_end / 1e6,
                (w->meas_end - w->pred_end) / 1e6);
    }
}

int cli_steps_validate(const char *pred_dir, const char *meas_dir, int world,
                       const char *tsv_path, const char *md_path, char *err,
                       size_t errlen)
{
    trace_steps_t pred = {0}, meas = {0};
    trace_step_cmp_t c = {0};
    char path[4096];
    snprintf(path, sizeof(path), "%s/steps.tsv", pred_dir);
    herd_status_t st = trace_steps_read(path, &pred, err, errlen);
    for (int r = 0; st == HERD_OK && r < world; r++) {
        snprintf(path, sizeof(path), "%s/steps-rank%d.tsv", meas_dir, r);
        st = trace_steps_read(path, &meas, err, errlen);
    }
    if (st == HERD_OK && trace_steps_compare(&pred, &meas, &c) != HERD_OK) {
        snprintf(err, errlen, "out of memory");
        st = HERD_ERR_NO_MEMORY;
    }
    FILE *t = st == HERD_OK ? fopen(tsv_path, "w") : NULL;
    FILE *m = t ? fopen(md_path, "w") : NULL;
    if (st == HERD_OK && (!t || !m)) {
        snprintf(err, errlen, "cannot write %s", t ? md_path : tsv_path);
        st = HERD_ERR_IO;
    }
    if (st == HERD_OK) {
        trace_step_cmp_print(&c, t, 1);
        gaps_md(&c, m);
    }
    int bad = t && fclose(t) != 0;
    bad |= m && fclose(m) != 0;
    if (bad) {
        snprintf(err, errlen, "cannot write %s", md_path);
        st = HERD_ERR_IO;
    }
    trace_step_cmp_free(&c);
    trace_steps_free(&meas);
    trace_steps_free(&pred);
    return st == HERD_OK ? 0 : 1;
}

int cli_compare_steps(const char *const *files, int nfiles, const char *dir)
{
    trace_steps_t pred = {0}, meas = {0};
    trace_step_cmp_t c = {0};
    char tsv[4096], md[4096];
    int rc = read_all(files, 1, &pred);
    if (!rc)
        rc = read_all(files + 1, nfiles - 1, &meas);
    if (!rc && trace_steps_compare(&pred, &meas, &c) != HERD_OK) {
        fprintf(stderr, "herd compare: out of memory\n");
        rc = 2;
    }
    if (!rc && c.differ)
        fprintf(stderr,
                "herd compare: %zu step(s) of the same rank, op and index "
                "differ in what they are (another algorithm or size?): left "
                "out\n",
                c.differ);
    if (!rc && c.matched == 0) {
        fprintf(stderr, "herd compare: no step matched: are these the step "
                        "records of one trace?\n");
        rc = 1;
    }
    if (!rc) {
        trace_step_cmp_print(&c, stdout, 0);
        snprintf(tsv, sizeof(tsv), "%s/steps.tsv", dir);
        snprintf(md, sizeof(md), "%s/steps.md", dir);
        FILE *f = cli_sim_mkdir("compare", dir) ? NULL : fopen(tsv, "w");
        FILE *g = f ? fopen(md, "w") : NULL;
        if (f)
            trace_step_cmp_print(&c, f, 1);
        if (g)
            gaps_md(&c, g);
        int bad = !f || !g;
        bad |= f && fclose(f) != 0;
        bad |= g && fclose(g) != 0;
        if (bad) {
            fprintf(stderr, "herd compare: cannot write %s\n", f ? md : tsv);
            rc = 2;
        } else
            printf("wrote:\n  %s\n  %s\n", tsv, md);
    }
    trace_step_cmp_free(&c);
    trace_steps_free(&meas);
    trace_steps_free(&pred);
    return rc;
}
