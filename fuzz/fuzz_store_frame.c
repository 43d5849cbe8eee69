/* fuzz/fuzz_store_frame.c - the rendezvous store's request frames
 * (real/store/proto.c, store_frame_decode): the bytes a client, or
 * anyone who reaches the store's port, sends. Frames are decoded one
 * after another as the server does, with the keys of wait/check. */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "real/store/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t off = 0; off < size;) {
        store_req_t req;
        size_t used = 0, need = 0;
        char why[256];
        store_frame_result_t r =
            store_frame_decode(data + off, size - off, 1 << 20, &req, &used,
                               &need, why, sizeof(why));
        if (r != STORE_FRAME_OK)
            break;
        if (req.nkeys > 0 && req.nkeys <= 4096) {
            const uint8_t **keys = calloc((size_t)req.nkeys, sizeof(*keys));
            size_t *klens = calloc((size_t)req.nkeys, sizeof(*klens));
            if (keys && klens)
                store_req_keys(&req, keys, klens);
            free(keys);
            free(klens);
        }
        if (used == 0)
            abort(); /* OK must consume the frame */
        off += used;
    }
    return 0;
}
