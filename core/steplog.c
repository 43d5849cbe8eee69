/* core/steplog.c - the step records of core/steplog.h: a TSV file per
 * writer, with a header line, one line per step. Lines are buffered by
 * stdio; a failed write is remembered and reported when the file is
 * closed, so a full disk does not go unnoticed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "core/steplog.h"

struct core_steplog {
    FILE *f;
    int failed;
};

const char core_steplog_header[] =
    "rank\tgroup\tseq\tcoll\talgo\top_bytes\top_start_ns\tstep\tkind\tpeer"
    "\tchannel\tbytes\tstart_ns\tend_ns";

const char *core_steplog_dir(void)
{
    const char *d = getenv("HERD_STEPS_DIR");
    return d && *d ? d : NULL;
}

herd_status_t core_steplog_open(const char *dir, const char *name,
                                core_steplog_t **out, char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
        snprintf(err, errlen, "step records: path too long: %s/%s", dir, name);
        return HERD_ERR_INVALID_ARG;
    }
    core_steplog_t *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "step records: out of memory");
        return HERD_ERR_NO_MEMORY;
    }
    l->f = fopen(path, "w");
    if (!l->f) {
        snprintf(err, errlen, "step records: cannot write %s: %s", path,
                 strerror(errno));
        free(l);
        return HERD_ERR_IO;
    }
    if (fprintf(l->f, "%s\n", core_steplog_header) < 0)
        l->failed = 1;
    *out = l;
    return HERD_OK;
}

void core_steplog_write(core_steplog_t *l, const core_step_rec_t *r)
{
    if (!l || l->failed)
        return;
    const char *kind = core_step_kind_name(r->kind);
    if (fprintf(l->f,
                "%d\t%d\t%" PRIu64 "\t%s\t%s\t%" PRIu64 "\t%" PRIu64
                "\t%" PRIu32 "\t%s\t%d\t%d\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
                "\n",
                r->rank, r->group, r->seq, herd_coll_name(r->coll),
                herd_algo_name(r->algo), r->op_bytes, r->op_start, r->step,
                kind, r->peer, r->channel, r->bytes, r->start, r->end) < 0)
        l->failed = 1;
}

herd_status_t core_steplog_close(core_steplog_t *l)
{
    if (!l)
        return HERD_OK;
    int bad = l->failed;
    if (fclose(l->f) != 0)
        bad = 1;
    free(l);
    return bad ? HERD_ERR_IO : HERD_OK;
}
