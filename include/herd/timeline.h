/* herd/timeline.h - the per-op record every engine emits.
 *
 * The simulator (predicted) and the real engines (measured) produce the
 * same records; trace/ turns them into Chrome trace JSON and TSV. */
#ifndef HERD_TIMELINE_H
#define HERD_TIMELINE_H

#include <stdint.h>

#include <herd/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum herd_tl_kind {
    HERD_TL_COLL,    /* a collective or p2p op (coll says which) */
    HERD_TL_COMPUTE, /* modelled compute */
    HERD_TL_WAIT,    /* time a rank spent blocked in herd_req_wait */
    HERD_TL_MARK     /* an instant marker (start == end) */
} herd_tl_kind_t;

typedef struct herd_tl_rec {
    herd_tl_kind_t kind;
    int rank;           /* world rank */
    int node;           /* node index (rank / ranks per node), 0 if unknown */
    int group;          /* group id (0: world) */
    uint64_t seq;       /* per-group op sequence number (1-based), 0 if n/a */
    herd_coll_t coll;   /* kind == HERD_TL_COLL */
    herd_algo_t algo;
    herd_dtype_t dtype;
    herd_op_t op;
    uint64_t count;     /* elements */
    uint64_t bytes;     /* bytes this rank contributes (count * size) */
    int peer;           /* root or peer, -1 if none */
    uint64_t start_ns;  /* when the op was posted / compute began */
    uint64_t end_ns;    /* when it completed */
    const char *label;  /* may be NULL; valid during the callback only */
    herd_status_t status;
} herd_tl_rec_t;

typedef void (*herd_timeline_cb)(const herd_tl_rec_t *rec, void *arg);

#ifdef __cplusplus
}
#endif
#endif
