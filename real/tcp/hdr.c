/* real/tcp/hdr.c - the checks of a data-port message header and of a
 * connection's handshake, as pure functions of their bytes: what recv.c
 * and link.c apply before acting on them, and what the fuzzer
 * (fuzz/fuzz_tcp_hdr.c) feeds with arbitrary bytes. Anyone who reaches a data
 * port can send a header, so every field that selects something (the type, the
 * rank an ABORT names, the group) or sizes an allocation (the payload length)
 * is range-checked here. */
#include <stdio.h>
#include <string.h>

#include "real/tcp/tcp.h"

int tcp_hdr_decode(const void *buf, size_t len, int world, tcp_hdr_t *out,
                   char *why, size_t whylen)
{
    tcp_hdr_t h;
    if (len < sizeof(h))
        return 0;
    memcpy(&h, buf, sizeof(h));
    if (h.magic != TCP_MAGIC) {
        snprintf(why, whylen, "protocol error (bad message header)");
        return -1;
    }
    if (h.type < TCP_MSG_COLL || h.type > TCP_MSG_ABORT) {
        snprintf(why, whylen, "protocol error (message type %u)", h.type);
        return -1;
    }
    if (h.type == TCP_MSG_ABORT && (h.tag < 0 || h.tag >= world)) {
        snprintf(why, whylen, "protocol error (an abort names rank %d of %d)",
                 h.tag, world);
        return -1;
    }
    /* A control message is its header: a payload would be read as the
     * next header. */
    if ((h.type == TCP_MSG_BYE || h.type == TCP_MSG_ABORT) && h.len != 0) {
        snprintf(why, whylen,
                 "protocol error (a control message with %llu "
                 "payload bytes)",
                 (unsigned long long)h.len);
        return -1;
    }
    if ((h.type == TCP_MSG_COLL || h.type == TCP_MSG_P2P) &&
        (h.group < 0 || h.len > TCP_HDR_MAX_LEN)) {
        snprintf(why, whylen, "protocol error (group %d, %llu payload bytes)",
                 h.group, (unsigned long long)h.len);
        return -1;
    }
    *out = h;
    return 1;
}

int tcp_handshake_check(const void *buf, size_t len, int world, int self,
                        const uint8_t *cookie, int *rank_out, char *why,
                        size_t whylen)
{
    tcp_handshake_t hs;
    if (len < sizeof(hs))
        return 0;
    memcpy(&hs, buf, sizeof(hs));
    if (hs.magic != TCP_HANDSHAKE_MAGIC) {
        snprintf(why, whylen, "not a handshake of this version");
        return -1;
    }
    unsigned diff = 0; /* no early exit: the time says nothing */
    for (size_t i = 0; i < TCP_COOKIE_BYTES; i++)
        diff |= (unsigned)(hs.cookie[i] ^ cookie[i]);
    if (diff) {
        snprintf(why, whylen, "without this job's cookie");
        return -1;
    }
    if (hs.rank >= (uint32_t)world || (int)hs.rank == self) {
        snprintf(why, whylen, "claiming rank %u of %d", hs.rank, world);
        return -1;
    }
    *rank_out = (int)hs.rank;
    return 1;
}
