/* real/tcp/wire.h - the tcp engine's wire format: the handshake a rank
 * sends on a connection it opens, and the 40-byte header before every
 * message. Their checks (hdr.c) are pure functions of the bytes (the
 * fuzz targets' entry points) covering every field a peer could get
 * wrong or a stranger could forge. */
#ifndef HERD_REAL_TCP_WIRE_H
#define HERD_REAL_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define TCP_MAGIC 0x31445248u           /* "HRD1" */
#define TCP_HANDSHAKE_MAGIC 0x32534448u /* "HDS2": with the job's cookie */
#define TCP_COOKIE_BYTES 16

typedef enum tcp_msg_type {
    TCP_MSG_COLL = 1, /* a collective's schedule step */
    TCP_MSG_P2P = 2,  /* send/recv, matched by (group, tag) in order */
    TCP_MSG_BYE = 3,  /* graceful close follows */
    TCP_MSG_ABORT = 4 /* tag = world rank that failed */
} tcp_msg_type_t;

typedef struct tcp_hdr {
    uint32_t magic;
    uint16_t type;
    uint16_t channel;
    int32_t group;
    int32_t tag;
    uint64_t seq;
    uint64_t len; /* payload bytes */
    uint64_t reserved;
} tcp_hdr_t;

/* What a connecting rank sends first: who it is, and the job's random
 * cookie (published in the store), so that only this job's ranks can
 * claim a rank. */
typedef struct tcp_handshake {
    uint32_t magic;
    uint32_t rank;
    uint8_t cookie[TCP_COOKIE_BYTES];
} tcp_handshake_t;

/* hdr.c: check a received header (a pure function of its bytes; world:
 * the job's size). 1: *out set; 0: fewer than 40 bytes; -1: bad, `why`
 * says what. */
#define TCP_HDR_MAX_LEN (1ull << 44) /* 16 TiB: no message is larger */
int tcp_hdr_decode(const void *buf, size_t len, int world, tcp_hdr_t *out,
                   char *why, size_t whylen);

/* hdr.c: check a handshake received by rank `self` of `world` ranks whose
 * job cookie is `cookie` (compared in constant time). 1: *rank_out is the
 * rank it speaks for; 0: fewer bytes than a handshake; -1: not one of
 * this job's ranks, `why` says what. */
int tcp_handshake_check(const void *buf, size_t len, int world, int self,
                        const uint8_t *cookie, int *rank_out, char *why,
                        size_t whylen);

#endif
