/* fuzz/fuzz_tcp_hdr.c - the tcp engine's data-port checks (real/tcp/hdr.c):
 * the 40-byte message header (tcp_hdr_decode) and the handshake that
 * claims a rank (tcp_handshake_check). A stranger's bytes must never be
 * accepted naming a rank outside the job, nor a handshake without the
 * job's cookie. The first byte picks the world size, the second which
 * check runs. */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz.h"
#include "real/tcp/wire.h"

static const uint8_t fz_cookie[TCP_COOKIE_BYTES] = "herd-fuzz-cookie";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int world = 1 + data[0];
    char why[128];
    if (data[1] & 1) {
        int rank = -1;
        tcp_handshake_t hs;
        if (tcp_handshake_check(data + 2, size - 2, world, 0, fz_cookie, &rank,
                                why, sizeof(why)) > 0) {
            memcpy(&hs, data + 2, sizeof(hs));
            if (rank < 0 || rank >= world || rank == 0 ||
                memcmp(hs.cookie, fz_cookie, sizeof(fz_cookie)))
                abort();
        }
        return 0;
    }
    tcp_hdr_t h;
    if (tcp_hdr_decode(data + 2, size - 2, world, &h, why, sizeof(why)) > 0) {
        if (h.magic != TCP_MAGIC || h.type < TCP_MSG_COLL ||
            h.type > TCP_MSG_ABORT)
            abort();
        if (h.type == TCP_MSG_ABORT && (h.tag < 0 || h.tag >= world))
            abort();
    }
    return 0;
}
