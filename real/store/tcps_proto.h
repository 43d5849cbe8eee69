/* real/store/tcps_proto.h - PyTorch's TCPStore wire protocol (torch >= 2,
 * the libuv server's, and torch 1.x's older numbering), which herd's
 * store server also speaks.
 *
 * A TCPStore stream has no frames: a connection opens with VALIDATE (op
 * 0) and a uint32 magic, then each command is one op byte and fields:
 * strings and values are a uint64 length and the bytes, integers are
 * 8 bytes, ping's nonce 4 bytes, all little-endian. set, append and
 * multi_set get no reply; the others are answered with raw values (a
 * string, an int64, or one byte). The opening five bytes can never begin
 * a herd frame (as a length they exceed STORE_MAX_FRAME), so the server
 * tells the two protocols apart by them. */
#ifndef HERD_REAL_STORE_TCPS_PROTO_H
#define HERD_REAL_STORE_TCPS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "real/store/proto.h"

/* The opening of a torch >= 2 client: VALIDATE and the magic 0x3C85F7CE. */
#define TCPS_HELLO_LEN 5u
extern const uint8_t tcps_hello[TCPS_HELLO_LEN];

typedef enum tcps_op {
    TCPS_VALIDATE = 0,
    TCPS_SET = 1,          /* key, value */
    TCPS_COMPARE_SET = 2,  /* key, expected, desired -> value */
    TCPS_GET = 3,          /* key -> value (empty when missing) */
    TCPS_ADD = 4,          /* key, int64 -> int64 */
    TCPS_CHECK = 5,        /* n, keys -> byte (0 ready, 1 not ready) */
    TCPS_WAIT = 6,         /* n, keys -> byte 0 once all exist */
    TCPS_GETNUMKEYS = 7,   /* -> int64 */
    TCPS_DELETE_KEY = 8,   /* key -> int64 deleted */
    TCPS_APPEND = 9,       /* key, value */
    TCPS_MULTI_GET = 10,   /* n, keys -> n values */
    TCPS_MULTI_SET = 11,   /* n, (key, value) pairs */
    TCPS_CANCEL_WAIT = 12, /* -> byte 1 */
    TCPS_PING = 13,        /* uint32 nonce -> the nonce */
    TCPS_OP_MAX_ = 14
} tcps_op_t;

/* torch 1.x (Debian's 1.13) numbers its commands from set = 0 and sends
 * no hello: set, compare_set, get, add, check, wait, num_keys,
 * watch_key, delete_key, with the same fields and replies as above (no
 * append, multi-get/set, cancel or ping). tcps_v1_op gives the command
 * a 1.x op byte stands for (TCPS_OP_MAX_ for none); tcps_v1_code the
 * byte for a command (-1 where 1.x has none). Byte 13, ping, is herd's
 * extension of 1.x: herd's server echoes it and speaks the numbering
 * above from then on (torch 1.x's server closes the connection), which
 * is how herd's client tells herd's server from torch's. */
#define TCPS_V1_WATCH_KEY 7
tcps_op_t tcps_v1_op(uint8_t byte);
int tcps_v1_code(tcps_op_t op);

enum { TCPS_READY = 0, TCPS_NOT_READY = 1 };
enum { TCPS_STOP_WAITING = 0, TCPS_WAIT_CANCELED = 1 };

typedef struct tcps_req {
    tcps_op_t op;
    const uint8_t *key; /* set, compare_set, get, add, delete, append */
    size_t klen;
    const uint8_t *val; /* set, append: value; compare_set: expected */
    size_t vlen;
    const uint8_t *val2; /* compare_set: desired */
    size_t vlen2;
    int64_t num;         /* add: delta; ping: nonce */
    uint64_t n;          /* check, wait, multi_get, multi_set: the count */
    const uint8_t *list; /* their keys (multi_set: key, value pairs) */
    size_t list_len;
} tcps_req_t;

/* Decode the command at the head of buf[0..len) (after the hello): a
 * pure function like store_frame_decode. PARTIAL until the command is
 * complete, *need (may be NULL) then a lower bound of its size; BAD for
 * an unknown op or a field over herd's limits (keys 4 KiB, values
 * 64 MiB, 4096 keys, a command over STORE_MAX_FRAME). */
store_frame_result_t tcps_decode(const uint8_t *buf, size_t len,
                                 tcps_req_t *req, size_t *used, size_t *need,
                                 char *why, size_t whylen);
/* The next string of a decoded list; advances *p and *left. */
/* The same for a torch 1.x stream (its op numbering). */
store_frame_result_t tcps_decode_v1(const uint8_t *buf, size_t len,
                                    tcps_req_t *req, size_t *used, size_t *need,
                                    char *why, size_t whylen);
const uint8_t *tcps_list_next(const uint8_t **p, size_t *left, size_t *len);
const char *tcps_op_name(int op);

#endif
