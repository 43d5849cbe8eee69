/* tests/support/calls_prog.c - the checking program of the new calls
 * (see calls_prog.h): every value written is a function of (sender,
 * receiver, index), so a block in the wrong place, from the wrong rank
 * or of the wrong length shows. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/calls_prog.h"

#define FAIL(n, ...)                                                           \
    do {                                                                       \
        snprintf(why, len, __VA_ARGS__);                                       \
        rc = (n);                                                              \
        goto out;                                                              \
    } while (0)

#define CALL(n, call)                                                          \
    do {                                                                       \
        herd_status_t st_ = (call);                                            \
        if (st_ != HERD_OK)                                                    \
            FAIL(n, "rank %d: %s -> %s: %s", me, #call, herd_status_name(st_), \
                 herd_last_error(c));                                          \
    } while (0)

/* all_to_all_v: what rank a sends b (uneven, with empty blocks) */
static size_t a2a_n(int a, int b)
{
    return (size_t)((a + 2 * b) % 4);
}

int calls_prog_check(herd_comm_t *c, char *why, size_t len)
{
    int me = herd_comm_rank(c), p = herd_comm_size(c), rc = 0;
    size_t *cnt = calloc((size_t)p, sizeof(size_t));
    size_t *ss = calloc((size_t)p, sizeof(size_t));
    size_t *rs = calloc((size_t)p, sizeof(size_t));
    int32_t *in = calloc(4096, sizeof(int32_t));
    int32_t *out = calloc(4096, sizeof(int32_t));
    int32_t *big[4] = {NULL};
    herd_bytes_t *objs = calloc((size_t)p + 3, sizeof(herd_bytes_t));
    herd_bytes_t one = {0};
    size_t total = 0, off = 0;
    if (!cnt || !ss || !rs || !in || !out || !objs)
        FAIL(1, "out of memory");

    /* 1. all_gather_v: rank r's block has r + 1 elements */
    for (int r = 0; r < p; r++)
        total += cnt[r] = (size_t)r + 1;
    for (size_t j = 0; j < cnt[me]; j++)
        in[j] = 100 * me + (int32_t)j;
    CALL(1, herd_all_gather_v(c, in, out, cnt, HERD_INT32, NULL));
    for (int r = 0; r < p; off += cnt[r], r++)
        for (size_t j = 0; j < cnt[r]; j++)
            if (out[off + j] != 100 * r + (int32_t)j)
                FAIL(1, "rank %d: all_gather_v block %d [%zu] = %d", me, r, j,
                     out[off + j]);

    /* 2. reduce_scatter_v (sum) over the same counts */
    for (size_t k = 0; k < total; k++)
        in[k] = (me + 1) * ((int32_t)k + 1);
    memset(out, 0, 4096 * sizeof(int32_t));
    CALL(2, herd_reduce_scatter_v(c, in, out, cnt, HERD_INT32, HERD_SUM, NULL));
    off = 0;
    for (int r = 0; r < me; r++)
        off += cnt[r];
    for (size_t j = 0; j < cnt[me]; j++)
        if (out[j] != (int32_t)(off + j + 1) * p * (p + 1) / 2)
            FAIL(2, "rank %d: reduce_scatter_v [%zu] = %d", me, j, out[j]);

    /* 3. all_to_all_v, uneven and with empty blocks (the MoE pattern) */
    size_t sn = 0, rn = 0;
    for (int q = 0; q < p; q++) {
        sn += ss[q] = a2a_n(me, q);
        rn += rs[q] = a2a_n(q, me);
    }
    off = 0;
    for (int q = 0; q < p; q++)
        for (size_t j = 0; j < ss[q]; j++)
            in[off++] = 1000 * me + 10 * q + (int32_t)j;
    memset(out, 0xff, 4096 * sizeof(int32_t));
    CALL(3, herd_all_to_all_v(c, in, sn, ss, out, rn, rs, HERD_INT32, NULL));
    off = 0;
    for (int q = 0; q < p; q++)
        for (size_t j = 0; j < rs[q]; j++, off++)
            if (out[off] != 1000 * q + 10 * me + (int32_t)j)
                FAIL(3, "rank %d: all_to_all_v from %d [%zu] = %d", me, q, j,
                     out[off]);
    /* even split with NULL splits */
    for (int q = 0; q < 2 * p; q++)
        in[q] = 7 * me + q;
    CALL(3, herd_all_to_all_v(c, in, 2 * (size_t)p, NULL, out, 2 * (size_t)p,
                              NULL, HERD_INT32, NULL));
    for (int q = 0; q < p; q++)
        if (out[2 * q] != 7 * q + 2 * me ||
            out[2 * q + 1] != 7 * q + 2 * me + 1)
            FAIL(3, "rank %d: even all_to_all_v from %d", me, q);

    /* 4. batch_isend_irecv, every rank listing its sends first, with
     * messages large enough to block an unbuffered transport */
    const size_t bn = 256 << 10;
    for (int i = 0; i < 4; i++)
        if (!(big[i] = malloc(bn * sizeof(int32_t))))
            FAIL(4, "out of memory");
    int next = (me + 1) % p, prev = (me + p - 1) % p;
    for (size_t j = 0; j < bn; j++) {
        big[0][j] = me * 3 + (int32_t)j;
        big[1][j] = me * 5 + (int32_t)j;
    }
    herd_p2p_op_t ops[4] = {{HERD_P2P_SEND, big[0], bn, HERD_INT32, next, 1},
                            {HERD_P2P_SEND, big[1], bn, HERD_INT32, prev, 2},
                            {HERD_P2P_RECV, big[2], bn, HERD_INT32, prev, 1},
                            {HERD_P2P_RECV, big[3], bn, HERD_INT32, next, 2}};
    if (p > 1) {
        herd_req_t *rq = NULL;
        CALL(4, herd_batch_isend_irecv(c, ops, 4, &rq));
        CALL(4, herd_req_wait(rq));
        herd_req_free(rq);
        for (size_t j = 0; j < bn; j += 4093)
            if (big[2][j] != prev * 3 + (int32_t)j ||
                big[3][j] != next * 5 + (int32_t)j)
                FAIL(4, "rank %d: batch_isend_irecv data at %zu", me, j);
    }

    /* 5. coalesced collectives: three tensors, one of them empty */
    {
        size_t cc[3] = {5, 0, 300};
        int32_t *sb[3] = {in, in + 8, in + 16},
                *rb[3] = {out, out + 8, out + 16};
        for (int k = 0; k < 400; k++)
            in[k] = me + k;
        herd_req_t *rq = NULL;
        CALL(5, herd_all_reduce_coalesced(c, (const void *const *)sb,
                                          (void *const *)rb, cc, 3, HERD_INT32,
                                          HERD_SUM, &rq));
        CALL(5, herd_req_wait(rq));
        herd_req_free(rq);
        for (int t = 0; t < 3; t++)
            for (size_t j = 0; j < cc[t]; j++)
                if (rb[t][j] != p * (p - 1) / 2 + p * (int32_t)(sb[t] - in + j))
                    FAIL(5, "rank %d: all_reduce_coalesced tensor %d [%zu]", me,
                         t, j);
        size_t gc[2] = {3, 2};
        int32_t *gs[2] = {in, in + 3}, *gr[2] = {out, out + 3 * p};
        for (int k = 0; k < 5; k++)
            in[k] = 10 * me + k;
        CALL(5, herd_all_gather_coalesced(c, (const void *const *)gs,
                                          (void *const *)gr, gc, 2, HERD_INT32,
                                          NULL));
        for (int r = 0; r < p; r++)
            if (gr[0][3 * r + 2] != 10 * r + 2 ||
                gr[1][2 * r + 1] != 10 * r + 4)
                FAIL(5, "rank %d: all_gather_coalesced block %d", me, r);
        size_t rc2[1] = {2};
        int32_t *rsb[1] = {in}, *rrb[1] = {out};
        for (int k = 0; k < 2 * p; k++)
            in[k] = k;
        CALL(5, herd_reduce_scatter_coalesced(c, (const void *const *)rsb,
                                              (void *const *)rrb, rc2, 1,
                                              HERD_INT32, HERD_SUM, NULL));
        if (out[0] != p * 2 * me || out[1] != p * (2 * me + 1))
            FAIL(5, "rank %d: reduce_scatter_coalesced %d %d", me, out[0],
                 out[1]);
    }

    /* 6. monitored_barrier where everyone arrives */
    CALL(6, herd_monitored_barrier(c, 30.0, 1));

    /* 7. object collectives: sizes differ per rank and buffer */
    {
        char text[64];
        herd_bytes_t src[3] = {{"alpha", 5}, {NULL, 0}, {"a longer third", 14}};
        CALL(7,
             herd_broadcast_bytes(c, me == p - 1 ? src : NULL, 3, p - 1, objs));
        if (objs[0].len != 5 || memcmp(objs[0].data, "alpha", 5) ||
            objs[1].len != 0 || objs[2].len != 14 ||
            memcmp(objs[2].data, "a longer third", 14))
            FAIL(7, "rank %d: broadcast_bytes", me);
        herd_bytes_free(objs, 3);
        snprintf(text, sizeof(text), "rank-%d%.*s", me, me * 3, "xxxxxxxxxxxx");
        CALL(7, herd_all_gather_bytes(c, text, strlen(text), objs));
        for (int r = 0; r < p; r++) {
            char want[64];
            snprintf(want, sizeof(want), "rank-%d%.*s", r, r * 3,
                     "xxxxxxxxxxxx");
            if (objs[r].len != strlen(want) ||
                memcmp(objs[r].data, want, objs[r].len))
                FAIL(7, "rank %d: all_gather_bytes from %d", me, r);
        }
        herd_bytes_free(objs, p);
        CALL(7, herd_gather_bytes(c, text, strlen(text), 0,
                                  me == 0 ? objs : NULL));
        for (int r = 0; me == 0 && r < p; r++)
            if (objs[r].len != strlen("rank-0") + 3 * (size_t)r ||
                ((char *)objs[r].data)[5] != '0' + r)
                FAIL(7, "rank 0: gather_bytes from %d", r);
        if (me == 0)
            herd_bytes_free(objs, p);
        herd_bytes_t *sc = calloc((size_t)p, sizeof(*sc));
        char(*words)[24] = calloc((size_t)p, 24);
        for (int r = 0; sc && words && r < p; r++) {
            snprintf(words[r], 24, "to-%d%s", r, r % 2 ? "-odd" : "");
            sc[r].data = words[r];
            sc[r].len = strlen(words[r]);
        }
        herd_status_t st = sc && words ? herd_scatter_bytes(c, sc, 0, &one)
                                       : HERD_ERR_NO_MEMORY;
        free(sc);
        free(words);
        CALL(7, st);
        snprintf(text, sizeof(text), "to-%d%s", me, me % 2 ? "-odd" : "");
        if (one.len != strlen(text) || memcmp(one.data, text, one.len))
            FAIL(7, "rank %d: scatter_bytes got %zu bytes", me, one.len);
    }
out:
    herd_bytes_free(&one, 1);
    for (int i = 0; i < 4; i++)
        free(big[i]);
    free(objs);
    free(cnt);
    free(ss);
    free(rs);
    free(in);
    free(out);
    return rc;
}

#define BAD(n, call, status, text)                                             \
    do {                                                                       \
        herd_status_t st_ = (call);                                            \
        if (st_ != (status) || !strstr(herd_last_error(c), (text)))            \
            FAIL(n, "%s -> %s / '%s'", #call, herd_status_name(st_),           \
                 herd_last_error(c));                                          \
    } while (0)

int calls_prog_bad_args(herd_comm_t *c, char *why, size_t len)
{
    int p = herd_comm_size(c), me = herd_comm_rank(c), rc = 0;
    size_t ss[8] = {0}, rs[8] = {0};
    int32_t buf[64];
    (void)me;
    if (p > 8)
        return 0;
    for (int q = 0; q < p; q++)
        ss[q] = rs[q] = 1;
    BAD(1,
        herd_all_to_all_v(c, buf, (size_t)p + 1, ss, buf, (size_t)p, rs,
                          HERD_INT32, NULL),
        HERD_ERR_INVALID_ARG, "add up to");
    ss[0] = (size_t)-3;
    BAD(2,
        herd_all_to_all_v(c, buf, 4, ss, buf, (size_t)p, rs, HERD_INT32, NULL),
        HERD_ERR_INVALID_ARG, "negative");
    BAD(3,
        herd_all_to_all_v(c, buf, (size_t)p + 1, NULL, buf, (size_t)p, rs,
                          HERD_INT32, NULL),
        p > 1 ? HERD_ERR_INVALID_ARG : HERD_OK, p > 1 ? "evenly" : "");
    ss[0] = 1;
    rs[me] = 2;
    BAD(4,
        herd_all_to_all_v(c, buf, (size_t)p, ss, buf, (size_t)p + 1, rs,
                          HERD_INT32, NULL),
        HERD_ERR_MISMATCH, "itself");
    BAD(5, herd_all_gather_v(c, buf, buf, NULL, HERD_INT32, NULL),
        HERD_ERR_INVALID_ARG, "NULL counts");
    BAD(6,
        herd_reduce_scatter_v(c, buf, buf, ss, HERD_FLOAT32, HERD_BXOR, NULL),
        HERD_ERR_INVALID_ARG, "bitwise");
    herd_p2p_op_t op = {HERD_P2P_SEND, buf, 1, HERD_INT32, me, 0};
    BAD(7, herd_batch_isend_irecv(c, &op, 1, NULL), HERD_ERR_INVALID_ARG,
        "op 0: send: peer");
    BAD(8, herd_broadcast_bytes(c, NULL, 1, p, NULL), HERD_ERR_INVALID_ARG,
        "root");
out:
    return rc;
}
