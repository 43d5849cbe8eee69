/* core/objects.c - the object collectives (torch's broadcast_object_list,
 * all_gather_object, gather_object, scatter_object_list) on byte buffers.
 *
 * As torch does it: the sizes go first (an int64 per buffer), then the
 * bytes, all through the engine's own collectives on staging buffers in
 * the engine's memory (herd_alloc; device memory on nccl, so the bytes
 * are copied in and out through the engine's copy op). all_gather uses
 * all_gather_v on the exact sizes; gather and scatter pad every block to
 * the largest, as torch's do. Results are malloc'd per buffer and handed
 * over only when everything succeeded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

#define OBJ_MAX_BUFS (1 << 20)

void herd_bytes_free(herd_bytes_t *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].data);
        v[i].data = NULL;
        v[i].len = 0;
    }
}

/* Host <-> engine memory (either way). */
static herd_status_t xcopy(herd_comm_t *c, void *dst, const void *src, size_t n)
{
    if (n == 0)
        return HERD_OK;
    if (c->ops->copy)
        return c->ops->copy(c, dst, src, n);
    memcpy(dst, src, n);
    return HERD_OK;
}

/* A staging buffer in engine memory holding a copy of `host` (NULL:
 * uninitialised). */
static herd_status_t stage(herd_comm_t *c, const char *name, size_t bytes,
                           const void *host, void **out)
{
    void *p = NULL;
    herd_status_t st = herd_alloc(c, bytes ? bytes : 1, &p);
    if (st != HERD_OK)
        return core_comm_error(c, st, "%s: %zu bytes of staging", name, bytes);
    if (host)
        st = xcopy(c, p, host, bytes);
    if (st != HERD_OK) {
        herd_free(c, p);
        return core_comm_error(c, st,
                               "%s: the %s engine cannot move these bytes "
                               "(on sim the object calls need real buffers)",
                               name, c->ops->name);
    }
    *out = p;
    return HERD_OK;
}

static herd_status_t unstage(herd_comm_t *c, const char *name, void *host,
                             const void *eng, size_t bytes)
{
    herd_status_t st = xcopy(c, host, eng, bytes);
    if (st != HERD_OK)
        return core_comm_error(c, st, "%s: copying %zu bytes back failed", name,
                               bytes);
    return HERD_OK;
}

/* out[i] = copies of the n blocks of `host` with lengths len[i] at
 * stride `stride` (0: packed). All or nothing. */
static herd_status_t hand_out(herd_comm_t *c, const char *name,
                              const char *host, const uint64_t *len,
                              size_t stride, int n, herd_bytes_t *out)
{
    herd_bytes_t *tmp = calloc((size_t)(n > 0 ? n : 1), sizeof(*tmp));
    if (!tmp)
        return core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory",
                               name);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        tmp[i].len = (size_t)len[i];
        tmp[i].data = malloc(tmp[i].len ? tmp[i].len : 1);
        if (!tmp[i].data) {
            herd_bytes_free(tmp, i);
            free(tmp);
            return core_comm_error(c, HERD_ERR_NO_MEMORY,
                                   "%s: out of memory for %zu bytes", name,
                                   (size_t)len[i]);
        }
        if (tmp[i].len)
            memcpy(tmp[i].data, host + off, tmp[i].len);
        off += stride ? stride : tmp[i].len;
    }
    memcpy(out, tmp, (size_t)n * sizeof(*out));
    free(tmp);
    return HERD_OK;
}

/* Sum of n sizes, or an error when it does not fit. */
static herd_status_t total_of(herd_comm_t *c, const char *name,
                              const uint64_t *len, int n, uint64_t *max,
                              size_t *sum_out)
{
    uint64_t sum = 0, m = 0;
    for (int i = 0; i < n; i++) {
        if (len[i] > (uint64_t)(PTRDIFF_MAX / 2) - sum)
            return core_comm_error(c, HERD_ERR_OVERFLOW,
                                   "%s: buffer sizes add up past %lld bytes",
                                   name, (long long)(PTRDIFF_MAX / 2));
        sum += len[i];
        if (len[i] > m)
            m = len[i];
    }
    if (max)
        *max = m;
    *sum_out = (size_t)sum;
    return HERD_OK;
}

/* The p sizes of every rank's `len`: all_gather of one int64 each. */
static herd_status_t gather_sizes(herd_comm_t *c, const char *name,
                                  uint64_t len, uint64_t *sizes)
{
    void *s = NULL, *r = NULL;
    herd_status_t st = stage(c, name, sizeof(len), &len, &s);
    if (st == HERD_OK)
        st = stage(c, name, (size_t)c->size * sizeof(len), NULL, &r);
    if (st == HERD_OK)
        st = herd_all_gather(c, s, r, 1, HERD_INT64, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, sizes, r, (size_t)c->size * sizeof(len));
    herd_free(c, s);
    herd_free(c, r);
    return st;
}

static herd_status_t check_root(herd_comm_t *c, const char *name, int root)
{
    if (root < 0 || root >= c->size)
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: root %d out of range [0, %d)", name, root,
                               c->size);
    return HERD_OK;
}

herd_status_t herd_broadcast_bytes(herd_comm_t *c, const herd_bytes_t *in,
                                   int n, int root, herd_bytes_t *out)
{
    const char *name = "broadcast_bytes";
    if (!c)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = check_root(c, name, root);
    if (st != HERD_OK)
        return st;
    if (n < 0 || n > OBJ_MAX_BUFS || (n > 0 && !out) ||
        (n > 0 && c->rank == root && !in))
        return core_comm_error(c, HERD_ERR_INVALID_ARG,
                               "%s: %d buffers (in %s, out %s); need 0..%d "
                               "with both arrays",
                               name, n, in ? "given" : "NULL",
                               out ? "given" : "NULL", OBJ_MAX_BUFS);
    uint64_t *len = calloc((size_t)n + 1, sizeof(*len));
    char *host = NULL;
    void *es = NULL, *ed = NULL;
    size_t total = 0;
    if (!len)
        return core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory",
                               name);
    if (c->rank == root)
        for (int i = 0; i < n; i++) {
            if (in[i].len && !in[i].data) {
                st = core_comm_error(c, HERD_ERR_INVALID_ARG,
                                     "%s: in[%d] has %zu bytes at NULL", name,
                                     i, in[i].len);
                goto cleanup;
            }
            len[i] = in[i].len;
        }
    st = stage(c, name, (size_t)n * sizeof(*len), len, &es);
    if (st == HERD_OK)
        st = herd_broadcast(c, es, (size_t)n, HERD_INT64, root, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, len, es, (size_t)n * sizeof(*len));
    if (st == HERD_OK)
        st = total_of(c, name, len, n, NULL, &total);
    if (st != HERD_OK)
        goto cleanup;
    host = malloc(total + 1);
    if (!host) {
        st = core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: %zu bytes", name,
                             total);
        goto cleanup;
    }
    if (c->rank == root) {
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            if (in[i].len)
                memcpy(host + off, in[i].data, in[i].len);
            off += in[i].len;
        }
    }
    st = stage(c, name, total, c->rank == root ? host : NULL, &ed);
    if (st == HERD_OK)
        st = herd_broadcast(c, ed, total, HERD_UINT8, root, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, host, ed, total);
    if (st == HERD_OK)
        st = hand_out(c, name, host, len, 0, n, out);
cleanup:
    if (ed)
        herd_free(c, ed);
    if (es)
        herd_free(c, es);
    free(host);
    free(len);
    return st;
}

herd_status_t herd_all_gather_bytes(herd_comm_t *c, const void *data,
                                    size_t len, herd_bytes_t *out)
{
    const char *name = "all_gather_bytes";
    if (!c)
        return HERD_ERR_INVALID_ARG;
    if (!out || (len && !data))
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: NULL %s", name,
                               out ? "data" : "out");
    int p = c->size;
    uint64_t *sizes = calloc((size_t)p, sizeof(*sizes));
    size_t *counts = calloc((size_t)p, sizeof(*counts));
    char *host = NULL;
    void *es = NULL, *er = NULL;
    size_t total = 0;
    herd_status_t st = HERD_OK;
    if (!sizes || !counts) {
        st = core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory", name);
        goto cleanup;
    }
    st = gather_sizes(c, name, len, sizes);
    if (st == HERD_OK)
        st = total_of(c, name, sizes, p, NULL, &total);
    if (st != HERD_OK)
        goto cleanup;
    for (int r = 0; r < p; r++)
        counts[r] = (size_t)sizes[r];
    host = malloc(total + 1);
    if (!host) {
        st = core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: %zu bytes", name,
                             total);
        goto cleanup;
    }
    st = stage(c, name, len, data, &es);
    if (st == HERD_OK)
        st = stage(c, name, total, NULL, &er);
    if (st == HERD_OK)
        st = herd_all_gather_v(c, es, er, counts, HERD_UINT8, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, host, er, total);
    if (st == HERD_OK)
        st = hand_out(c, name, host, sizes, 0, p, out);
cleanup:
    if (er)
        herd_free(c, er);
    if (es)
        herd_free(c, es);
    free(host);
    free(counts);
    free(sizes);
    return st;
}

herd_status_t herd_gather_bytes(herd_comm_t *c, const void *data, size_t len,
                                int root, herd_bytes_t *out)
{
    const char *name = "gather_bytes";
    if (!c)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = check_root(c, name, root);
    if (st != HERD_OK)
        return st;
    if ((c->rank == root && !out) || (len && !data))
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: NULL %s", name,
                               len && !data ? "data" : "out on the root");
    int p = c->size, me_root = c->rank == root;
    uint64_t *sizes = calloc((size_t)p, sizeof(*sizes)), max = 0;
    char *host = NULL;
    void *es = NULL, *er = NULL;
    size_t total = 0;
    if (!sizes)
        return core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory",
                               name);
    st = gather_sizes(c, name, len, sizes);
    if (st == HERD_OK)
        st = total_of(c, name, sizes, p, &max, &total);
    if (st == HERD_OK && max > (uint64_t)(PTRDIFF_MAX / 2) / (uint64_t)p)
        st = core_comm_error(c, HERD_ERR_OVERFLOW,
                             "%s: %d blocks of %llu bytes overflow", name, p,
                             (unsigned long long)max);
    if (st != HERD_OK)
        goto cleanup;
    /* every block padded to the largest, as torch's gather_object does;
     * only the root holds all p of them */
    host = calloc((size_t)max * (size_t)(me_root ? p : 1) + 1, 1);
    if (!host) {
        st = core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory", name);
        goto cleanup;
    }
    if (len)
        memcpy(host, data, len);
    st = stage(c, name, (size_t)max, host, &es);
    if (st == HERD_OK && me_root)
        st = stage(c, name, (size_t)max * (size_t)p, NULL, &er);
    if (st == HERD_OK)
        st = herd_gather(c, es, er, (size_t)max, HERD_UINT8, root, NULL);
    if (st == HERD_OK && me_root)
        st = unstage(c, name, host, er, (size_t)max * (size_t)p);
    if (st == HERD_OK && me_root)
        st = hand_out(c, name, host, sizes, (size_t)max, p, out);
cleanup:
    if (er)
        herd_free(c, er);
    if (es)
        herd_free(c, es);
    free(host);
    free(sizes);
    return st;
}

herd_status_t herd_scatter_bytes(herd_comm_t *c, const herd_bytes_t *in,
                                 int root, herd_bytes_t *out)
{
    const char *name = "scatter_bytes";
    if (!c)
        return HERD_ERR_INVALID_ARG;
    herd_status_t st = check_root(c, name, root);
    if (st != HERD_OK)
        return st;
    int p = c->size, me_root = c->rank == root;
    if (!out || (me_root && !in))
        return core_comm_error(c, HERD_ERR_INVALID_ARG, "%s: NULL %s", name,
                               out ? "in on the root" : "out");
    uint64_t *sizes = calloc((size_t)p, sizeof(*sizes)), max = 0;
    char *host = NULL;
    void *el = NULL, *es = NULL, *er = NULL;
    size_t total = 0;
    if (!sizes)
        return core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory",
                               name);
    for (int r = 0; me_root && r < p; r++) {
        if (in[r].len && !in[r].data) {
            st = core_comm_error(c, HERD_ERR_INVALID_ARG,
                                 "%s: in[%d] has %zu bytes at NULL", name, r,
                                 in[r].len);
            goto cleanup;
        }
        sizes[r] = in[r].len;
    }
    /* the root's sizes to everyone: each learns its own and the padding */
    st = stage(c, name, (size_t)p * sizeof(*sizes), sizes, &el);
    if (st == HERD_OK)
        st = herd_broadcast(c, el, (size_t)p, HERD_INT64, root, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, sizes, el, (size_t)p * sizeof(*sizes));
    if (st == HERD_OK)
        st = total_of(c, name, sizes, p, &max, &total);
    if (st == HERD_OK && max > (uint64_t)(PTRDIFF_MAX / 2) / (uint64_t)p)
        st = core_comm_error(c, HERD_ERR_OVERFLOW,
                             "%s: %d blocks of %llu bytes overflow", name, p,
                             (unsigned long long)max);
    if (st != HERD_OK)
        goto cleanup;
    host = calloc((size_t)max * (size_t)(me_root ? p : 1) + 1, 1);
    if (!host) {
        st = core_comm_error(c, HERD_ERR_NO_MEMORY, "%s: out of memory", name);
        goto cleanup;
    }
    for (int r = 0; me_root && r < p; r++)
        if (in[r].len)
            memcpy(host + (size_t)r * (size_t)max, in[r].data, in[r].len);
    if (me_root)
        st = stage(c, name, (size_t)max * (size_t)p, host, &es);
    if (st == HERD_OK)
        st = stage(c, name, (size_t)max, NULL, &er);
    if (st == HERD_OK)
        st = herd_scatter(c, es, er, (size_t)max, HERD_UINT8, root, NULL);
    if (st == HERD_OK)
        st = unstage(c, name, host, er, (size_t)max);
    if (st == HERD_OK)
        st = hand_out(c, name, host, &sizes[c->rank], 0, 1, out);
cleanup:
    if (er)
        herd_free(c, er);
    if (es)
        herd_free(c, es);
    if (el)
        herd_free(c, el);
    free(host);
    free(sizes);
    return st;
}
