/* real/store/file.c - the file store behind file:// rendezvous: one
 * append-only file of set/delete records shared by processes on one host
 * (or on a file system with working flock). Every operation takes an
 * flock, replays the records it has not seen into a table, and appends
 * its change; get and wait poll with short sleeps until the keys appear
 * or the timeout passes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "real/store/map.h"
#include "real/store/proto.h"
#include "real/store/store_int.h"

#define FILE_REC_SET 'S'
#define FILE_REC_DEL 'D'

struct store_file {
    int fd;
    store_map_t *map; /* the records up to `off`, replayed */
    off_t off;
};

herd_status_t store_file_open(const char *path, store_file_t **out)
{
    store_file_t *f = calloc(1, sizeof(*f));
    if (!f)
        return HERD_ERR_NO_MEMORY;
    herd_status_t st = store_map_create(&f->map);
    if (st != HERD_OK) {
        free(f);
        return st;
    }
    f->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (f->fd < 0) {
        st = errno == ENOENT || errno == EACCES ? HERD_ERR_NOT_FOUND
                                                : HERD_ERR_IO;
        store_file_close(f);
        return st;
    }
    *out = f;
    return HERD_OK;
}

void store_file_close(store_file_t *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    store_map_destroy(f->map);
    free(f);
}

static herd_status_t file_lock(store_file_t *f, int how)
{
    while (flock(f->fd, how) != 0)
        if (errno != EINTR)
            return HERD_ERR_IO;
    return HERD_OK;
}

static void file_unlock(store_file_t *f)
{
    flock(f->fd, LOCK_UN);
}

/* Apply the records in buf; returns the bytes of whole records used. */
static size_t file_replay(store_file_t *f, const uint8_t *buf, size_t len)
{
    store_rbuf_t r;
    store_rbuf_init(&r, buf, len);
    size_t used = 0;
    for (;;) {
        uint8_t type = store_rbuf_u8(&r);
        size_t kl = 0, vl = 0;
        const uint8_t *k = store_rbuf_bytes(&r, STORE_MAX_KEY, &kl);
        const uint8_t *v = store_rbuf_bytes(&r, STORE_MAX_VALUE, &vl);
        if (r.bad)
            return used;
        if (type == FILE_REC_SET)
            store_map_put(f->map, k, kl, v, vl);
        else if (type == FILE_REC_DEL)
            store_map_del(f->map, k, kl);
        used = r.off;
    }
}

/* Bring the table up to the end of the file (lock held). */
static herd_status_t file_sync(store_file_t *f)
{
    struct stat sb;
    if (fstat(f->fd, &sb) != 0)
        return HERD_ERR_IO;
    if (sb.st_size == f->off)
        return HERD_OK;
    if (sb.st_size < f->off) /* truncated under us: start over */
        f->off = 0;
    size_t n = (size_t)(sb.st_size - f->off);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return HERD_ERR_NO_MEMORY;
    ssize_t got = pread(f->fd, buf, n, f->off);
    if (got < 0) {
        free(buf);
        return HERD_ERR_IO;
    }
    if (f->off == 0) {
        store_map_destroy(f->map);
        f->map = NULL;
        if (store_map_create(&f->map) != HERD_OK) {
            free(buf);
            return HERD_ERR_NO_MEMORY;
        }
    }
    f->off += (off_t)file_replay(f, buf, (size_t)got);
    free(buf);
    return HERD_OK;
}

/* Append one record (lock held, table in sync) and apply it. */
static herd_status_t file_append(store_file_t *f, uint8_t type, const char *key,
                                 const void *val, size_t vl)
{
    store_wbuf_t w;
    store_wbuf_init(&w);
    store_wbuf_u8(&w, type);
    store_wbuf_bytes(&w, key, strlen(key));
    store_wbuf_bytes(&w, val, vl);
    herd_status_t st = w.failed ? HERD_ERR_NO_MEMORY : HERD_OK;
    size_t done = 0;
    while (st == HERD_OK && done < w.len) {
        ssize_t k = write(f->fd, w.data + done, w.len - done);
        if (k < 0 && errno != EINTR)
            st = HERD_ERR_IO;
        else if (k > 0)
            done += (size_t)k;
    }
    store_wbuf_free(&w);
    return st == HERD_OK ? file_sync(f) : st;
}

/* Lock (LOCK_SH or LOCK_EX) and bring the table up to date, as every
 * operation starts; on failure nothing is left locked. */
static herd_status_t file_begin(store_file_t *f, int how)
{
    herd_status_t st = file_lock(f, how);
    if (st == HERD_OK && (st = file_sync(f)) != HERD_OK)
        file_unlock(f);
    return st;
}

/* ---- operations ------------------------------------------------------- */

herd_status_t store_file_set(store_file_t *f, const char *key, const void *val,
                             size_t len)
{
    herd_status_t st = file_begin(f, LOCK_EX);
    if (st != HERD_OK)
        return st;
    st = file_append(f, FILE_REC_SET, key, val, len);
    file_unlock(f);
    return st;
}

herd_status_t store_file_add(store_file_t *f, const char *key, int64_t delta,
                             int64_t *value_out)
{
    herd_status_t st = file_begin(f, LOCK_EX);
    if (st != HERD_OK)
        return st;
    int64_t v = 0;
    if ((st = store_map_add(f->map, key, strlen(key), delta, &v)) == HERD_OK) {
        store_entry_t *e = store_map_get(f->map, key, strlen(key));
        st = file_append(f, FILE_REC_SET, key, e->val, e->vlen);
    }
    file_unlock(f);
    if (st == HERD_OK)
        *value_out = v;
    return st;
}

herd_status_t store_file_cas(store_file_t *f, const char *key, const void *exp,
                             size_t elen, const void *des, size_t dlen,
                             void **cur_out, size_t *curlen_out)
{
    herd_status_t st = file_begin(f, LOCK_EX);
    if (st != HERD_OK)
        return st;
    const void *cur = NULL;
    size_t cl = 0;
    void *copy = NULL;
    st = store_map_cas(f->map, key, strlen(key), exp, elen, des, dlen, &cur,
                       &cl);
    if (st == HERD_OK && !(copy = store_dup_bytes(cur, cl)))
        st = HERD_ERR_NO_MEMORY;
    store_entry_t *e = store_map_get(f->map, key, strlen(key));
    /* Rewriting an unchanged value is harmless and keeps this simple. */
    if (st == HERD_OK && e)
        st = file_append(f, FILE_REC_SET, key, e->val, e->vlen);
    file_unlock(f);
    if (st != HERD_OK) {
        free(copy);
        return st;
    }
    *cur_out = copy;
    *curlen_out = cl;
    return HERD_OK;
}

static int all_exist(store_file_t *f, const char *const *keys, int n)
{
    for (int i = 0; i < n; i++)
        if (!store_map_get(f->map, keys[i], strlen(keys[i])))
            return 0;
    return 1;
}

herd_status_t store_file_check(store_file_t *f, const char *const *keys, int n,
                               int *all_out)
{
    herd_status_t st = file_begin(f, LOCK_SH);
    if (st != HERD_OK)
        return st;
    *all_out = all_exist(f, keys, n);
    file_unlock(f);
    return HERD_OK;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Poll until every key exists: 1 ms sleeps growing to 50 ms. */
herd_status_t store_file_wait(store_file_t *f, const char *const *keys, int n,
                              double timeout_s)
{
    double deadline = mono_s() + timeout_s;
    long sleep_us = 1000;
    for (;;) {
        int all = 0;
        herd_status_t st = store_file_check(f, keys, n, &all);
        if (st != HERD_OK || all)
            return st;
        double left = deadline - mono_s();
        if (left <= 0)
            return HERD_ERR_TIMEOUT;
        long us = left * 1e6 < sleep_us ? (long)(left * 1e6) + 1 : sleep_us;
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
        if (sleep_us < 50000)
            sleep_us *= 2;
    }
}

herd_status_t store_file_get(store_file_t *f, const char *key, double timeout_s,
                             void **val_out, size_t *len_out)
{
    herd_status_t st = store_file_wait(f, &key, 1, timeout_s);
    if (st != HERD_OK)
        return st;
    /* The key may have been deleted since: then wait again, briefly. */
    if ((st = file_begin(f, LOCK_SH)) != HERD_OK)
        return st;
    store_entry_t *e = NULL;
    void *copy = NULL;
    if ((e = store_map_get(f->map, key, strlen(key))) != NULL &&
        !(copy = store_dup_bytes(e->val, e->vlen)))
        st = HERD_ERR_NO_MEMORY;
    file_unlock(f);
    if (st == HERD_OK && !e)
        st = HERD_ERR_TIMEOUT;
    if (st != HERD_OK)
        return st;
    *val_out = copy;
    *len_out = e->vlen;
    return HERD_OK;
}

herd_status_t store_file_delete(store_file_t *f, const char *key,
                                int *deleted_out)
{
    herd_status_t st = file_begin(f, LOCK_EX);
    if (st != HERD_OK)
        return st;
    int had = 0;
    if ((had = store_map_get(f->map, key, strlen(key)) != NULL))
        st = file_append(f, FILE_REC_DEL, key, "", 0);
    file_unlock(f);
    if (st == HERD_OK)
        *deleted_out = had;
    return st;
}

herd_status_t store_file_num_keys(store_file_t *f, int64_t *n_out)
{
    herd_status_t st = file_begin(f, LOCK_SH);
    if (st != HERD_OK)
        return st;
    *n_out = (int64_t)store_map_count(f->map);
    file_unlock(f);
    return HERD_OK;
}
