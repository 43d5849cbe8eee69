/* real/store/proto.h - the store's wire format, shared by server and
 * client, and the limits that protect the server.
 *
 * Every message is a frame: a uint32 little-endian body length, then the
 * body. A request body is one op byte and its fields; a reply body is an
 * int32 status (herd_status_t) and its fields. Fields are int64 values
 * (8 bytes, little-endian) or byte strings (an int64 length, then the
 * bytes), as torch's TCPStore writes them. */
#ifndef HERD_REAL_STORE_PROTO_H
#define HERD_REAL_STORE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include <herd/status.h>

#define STORE_MAX_KEY 4096u
#define STORE_MAX_VALUE (64u << 20)
#define STORE_MAX_WAIT_KEYS 4096u
#define STORE_MAX_TOKEN 1024u
/* The largest body the server accepts: one maximal value plus keys. */
#define STORE_MAX_FRAME (STORE_MAX_VALUE + (1u << 20))
/* The largest body before authentication: one auth frame (op, length,
 * token). */
#define STORE_MAX_AUTH_FRAME (1u + 8u + STORE_MAX_TOKEN)

typedef enum store_op {
    STORE_OP_AUTH = 1,     /* token -> status */
    STORE_OP_SET = 2,      /* key, value */
    STORE_OP_GET = 3,      /* key, timeout_ms -> value */
    STORE_OP_ADD = 4,      /* key, delta -> new value */
    STORE_OP_CAS = 5,      /* key, expected, desired -> current */
    STORE_OP_WAIT = 6,     /* n, keys..., timeout_ms */
    STORE_OP_CHECK = 7,    /* n, keys... -> all exist */
    STORE_OP_DELETE = 8,   /* key -> deleted */
    STORE_OP_NUM_KEYS = 9, /* -> count */
    STORE_OP_MAX_ = 10
} store_op_t;

/* A growable output buffer for building frames. */
typedef struct store_wbuf {
    uint8_t *data;
    size_t len, cap;
    int failed; /* an allocation failed: the frame is unusable */
} store_wbuf_t;

void store_wbuf_init(store_wbuf_t *w);
void store_wbuf_free(store_wbuf_t *w);
void store_wbuf_u8(store_wbuf_t *w, uint8_t v);
void store_wbuf_i32(store_wbuf_t *w, int32_t v);
void store_wbuf_i64(store_wbuf_t *w, int64_t v);
void store_wbuf_bytes(store_wbuf_t *w, const void *p, size_t n);
/* Raw bytes with no length field (to build a string from parts). */
void store_wbuf_raw(store_wbuf_t *w, const void *p, size_t n);
/* Reserve the 4-byte frame header (call first) and fill it (call last). */
void store_wbuf_begin(store_wbuf_t *w);
void store_wbuf_end(store_wbuf_t *w);

/* A bounds-checked reader over one frame body. Any read past the end sets
 * `bad` and yields zeros. */
typedef struct store_rbuf {
    const uint8_t *p;
    size_t len, off;
    int bad;
} store_rbuf_t;

void store_rbuf_init(store_rbuf_t *r, const void *p, size_t len);
uint8_t store_rbuf_u8(store_rbuf_t *r);
int32_t store_rbuf_i32(store_rbuf_t *r);
int64_t store_rbuf_i64(store_rbuf_t *r);
/* A byte string of at most `max` bytes, pointing into the frame. */
const uint8_t *store_rbuf_bytes(store_rbuf_t *r, size_t max, size_t *len_out);

uint32_t store_le32(const uint8_t *p);

/* One decoded request. Pointers point into the decoded buffer. */
typedef struct store_req {
    store_op_t op;
    const uint8_t *key; /* set, get, add, compare_set, delete */
    size_t klen;
    const uint8_t *val; /* set: value; compare_set: expected; auth: token */
    size_t vlen;
    const uint8_t *val2; /* compare_set: desired */
    size_t vlen2;
    int64_t num;   /* get, wait: timeout_ms; add: delta */
    int64_t nkeys; /* wait, check: how many keys (see store_req_keys) */
    const uint8_t *keys;
    size_t keys_len;
} store_req_t;

typedef enum store_frame_result {
    STORE_FRAME_OK = 0,      /* *req and *used are set */
    STORE_FRAME_PARTIAL = 1, /* the frame is not complete yet */
    STORE_FRAME_BAD = -1     /* why says what is wrong */
} store_frame_result_t;

/* Decode the request frame at the head of buf[0..len): a pure function
 * (no allocation, no state), so it can be fuzzed on any bytes. Bodies
 * longer than max_body are BAD as soon as the length field is in. On OK,
 * *used is the frame's size (4 + body). *need (may be NULL) gets the
 * frame's size once its length field is in, else 0. */
store_frame_result_t store_frame_decode(const uint8_t *buf, size_t len,
                                        size_t max_body, store_req_t *req,
                                        size_t *used, size_t *need, char *why,
                                        size_t whylen);
/* The keys of a decoded wait/check (arrays of req->nkeys). */
void store_req_keys(const store_req_t *req, const uint8_t **keys,
                    size_t *klens);
/* The name of an op ("set"), "?" when unknown. */
const char *store_op_name(int op);
/* Compare a presented token with the expected one in time that depends
 * only on the expected token's length. 1 when equal. */
int store_token_equal(const uint8_t *got, size_t glen, const char *want);

#endif
