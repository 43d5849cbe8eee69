/* fuzz/fuzz_store_tcps.c - PyTorch TCPStore commands as herd's store
 * server reads them (real/store/tcps_proto.c, tcps_decode): the bytes
 * any torch client, or anyone who reaches the store's port and opens
 * with TCPStore's hello, sends. Commands are decoded one after another
 * as the server does, with the keys (and values) of the list commands. */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "real/store/tcps_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t off = 0; off < size;) {
        tcps_req_t q;
        size_t used = 0, need = 0;
        char why[256];
        store_frame_result_t r = tcps_decode(data + off, size - off, &q, &used,
                                             &need, why, sizeof(why));
        if (r != STORE_FRAME_OK)
            break;
        const uint8_t *p = q.list;
        size_t left = q.list_len, len = 0;
        int pairs = q.op == TCPS_MULTI_SET;
        for (uint64_t i = 0; p && i < q.n; i++) {
            tcps_list_next(&p, &left, &len);
            if (pairs)
                tcps_list_next(&p, &left, &len);
        }
        if (used == 0 || left != 0)
            abort(); /* OK consumes the command; lists are exact */
        off += used;
    }
    return 0;
}
