/* workload/parallel/report.c - the text and JSON reports of a 3D-parallel
 * run (layout, steady step, idle time against the schedule's bubble,
 * communication by kind, rank 0's ops per step, memory per rank) and the
 * diagnosis of a hang (DDP's grouping of the ranks' stuck ops). */
#include <stdio.h>
#include <string.h>

#include "workload/common/report.h"
#include "workload/parallel/report.h"

#define GIB 1073741824.0

void par_report_diagnosis(const par_collect_t *c, const par_outcome_t *o,
                          char *buf, size_t len)
{
    wl_buf_t d = {buf, len, 0};
    buf[0] = '\0';
    if (o->status == HERD_OK)
        return;
    wl_diag_outcome(&d, o->status, c->steps.stuck, c->world, o->errors);
    if (o->info && o->info->report && *o->info->report)
        wl_put(&d, "engine report:\n%s", o->info->report);
}

static const char *zero_name(const par_job_t *j)
{
    static const char *const n[] = {"data parallel (all_reduce)", "ZeRO-1",
                                    "ZeRO-2", "ZeRO-3"};
    return j->dp > 1 ? n[j->cfg.zero_stage] : "no data parallelism";
}

static void text_header(const par_job_t *j, FILE *f)
{
    fprintf(f,
            "model %s: %d layers, hidden %ld, seq %ld, %ld heads; %d ranks "
            "= tp %d x pp %d x dp %d (rank = pp_idx*%d + dp_idx*%d + "
            "tp_idx)\n",
            j->model.name, j->nlayers, j->hidden, j->seq, j->heads, j->world,
            j->tp, j->pp, j->dp, j->dp * j->tp, j->tp);
    fprintf(f, "%s schedule, %d micro-batches of %d; %s%s; %s%s; %s\n",
            par_schedule_name(j->cfg.schedule), j->cfg.micro_batches,
            j->cfg.micro_batch_size,
            j->tp > 1 ? "tensor parallel" : "no tensor parallelism",
            j->tp > 1 && j->cfg.sequence_parallel ? " + sequence parallel" : "",
            zero_name(j), j->cfg.overlap_comm ? ", overlap_comm" : "",
            herd_dtype_name(j->cfg.dtype));
}

static void text_memory(const par_summary_t *s, const par_job_t *j, FILE *f)
{
    const par_memory_t *m = &s->mem;
    fprintf(f,
            "memory per rank (the most: rank %d, stage %d), GiB: params %.2f, "
            "grads %.2f, optimizer %.2f, zero3 gathered %.2f, activations "
            "%.2f (%d micro-batch%s); total %.2f",
            m->rank, m->rank / (j->dp * j->tp), (double)m->params / GIB,
            (double)m->grads / GIB, (double)m->optimizer / GIB,
            (double)m->gathered / GIB, (double)m->activations / GIB,
            m->inflight, m->inflight == 1 ? "" : "es", (double)m->total / GIB);
    wl_gpu_mem_verdict(f, "parallel", j->cfg.gpu_mem_gib, m->rank, m->total);
    fprintf(f, "\n");
}

static void text_counts(const par_collect_t *c, FILE *f)
{
    par_counts_t n;
    par_collect_counts(c, 0, &n);
    fprintf(f, "rank 0's communication per step:");
    int any = 0;
    for (int k = 0; k < PAR_NCAT; k++)
        for (int op = 0; op < HERD_COLL_COUNT; op++)
            if (n.n[k][op]) {
                fprintf(f, "%s %s %s x%u (%.1f MiB)", any++ ? "," : "",
                        par_cat_name((par_cat_t)k),
                        herd_coll_name((herd_coll_t)op), n.n[k][op],
                        (double)n.bytes[k][op] / 1048576.0);
            }
    fprintf(f, "%s\n", any ? "" : " none");
}

void par_report_text(const par_collect_t *c, const par_outcome_t *o, FILE *f)
{
    const par_job_t *j = c->job;
    par_summary_t s;
    par_collect_summary(c, &s);
    text_header(j, f);
    if (s.nsteady) {
        fprintf(f,
                "step: %.3f ms (max over ranks %.3f); compute %.3f ms, idle "
                "%.3f ms (%.1f%%: the pipeline bubble and exposed "
                "communication; the schedule's bubble %s = %.1f%%)\n",
                s.step_s * 1e3, s.max_step_s * 1e3, s.compute_s * 1e3,
                s.idle_s * 1e3, s.step_s > 0 ? 100 * s.idle_s / s.step_s : 0,
                j->vstages > 1 ? "(P-1)/(v*M+P-1)" : "(P-1)/(M+P-1)",
                100 * s.bubble);
        if (wl_data_on(&j->data)) /* workload/common/data.h */
            fprintf(f,
                    "data loading: wait per step %.3f ms (mean over "
                    "ranks)\n",
                    s.data_s * 1e3);
        fprintf(f, "communication per rank and step, busy ms:");
        for (int k = 0; k < PAR_NCAT; k++)
            fprintf(f, " %s %.3f", par_cat_name((par_cat_t)k),
                    s.comm_s[k] * 1e3);
        fprintf(f, "\n");
    } else {
        fprintf(f, "step: no step completed on every rank\n");
    }
    text_counts(c, f);
    text_memory(&s, j, f);
    char diag[8192];
    par_report_diagnosis(c, o, diag, sizeof(diag));
    if (diag[0])
        fprintf(f, "\n%s", diag);
}

static json_t *json_counts(const par_collect_t *c)
{
    par_counts_t n;
    par_collect_counts(c, 0, &n);
    json_t *a = json_array();
    for (int k = 0; a && k < PAR_NCAT; k++)
        for (int op = 0; op < HERD_COLL_COUNT; op++)
            if (n.n[k][op])
                json_array_append_new(
                    a, json_pack("{s:s,s:s,s:i,s:I}", "kind",
                                 par_cat_name((par_cat_t)k), "op",
                                 herd_coll_name((herd_coll_t)op), "count",
                                 (int)n.n[k][op], "bytes",
                                 (json_int_t)n.bytes[k][op]));
    return a;
}

json_t *par_report_json(const par_collect_t *c, const par_outcome_t *o)
{
    const par_job_t *j = c->job;
    par_summary_t s;
    par_collect_summary(c, &s);
    char diag[8192];
    par_report_diagnosis(c, o, diag, sizeof(diag));
    const par_memory_t *m = &s.mem;
    json_t *mem = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:i,s:b}", "params",
        (json_int_t)m->params, "grads", (json_int_t)m->grads, "optimizer",
        (json_int_t)m->optimizer, "gathered", (json_int_t)m->gathered,
        "activations", (json_int_t)m->activations, "inflight", m->inflight,
        "total", (json_int_t)m->total, "rank", m->rank, "fits", s.fits);
    json_t *comm = json_object();
    for (int k = 0; comm && k < PAR_NCAT; k++)
        json_object_set_new(comm, par_cat_name((par_cat_t)k),
                            json_real(s.comm_s[k]));
    return json_pack(
        "{s:s,s:i,s:i,s:i,s:i,s:s,s:i,s:i,s:b,s:s,s:f,s:f,s:f,s:f,s:f,s:I,"
        "s:o,s:o,s:o,s:s}",
        "model", j->model.name ? j->model.name : "", "world", j->world, "tp",
        j->tp, "pp", j->pp, "dp", j->dp, "schedule",
        par_schedule_name(j->cfg.schedule), "micro_batches",
        j->cfg.micro_batches, "zero_stage", j->cfg.zero_stage,
        "sequence_parallel", j->cfg.sequence_parallel, "status",
        herd_status_string(o->status), "step_s", s.step_s, "max_step_s",
        s.max_step_s, "compute_s", s.compute_s, "idle_s", s.idle_s, "bubble",
        s.bubble, "steady_steps", (json_int_t)s.nsteady, "comm_s",
        comm ? comm : json_null(), "ops", json_counts(c), "memory",
        mem ? mem : json_null(), "diagnosis", diag);
}
