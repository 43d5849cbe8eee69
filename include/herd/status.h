/* herd/status.h - the one status enum of herd and its strings.
 *
 * The list below is the single source: the enum and the strings that
 * herd_status_string() returns are both generated from it. 0 is success,
 * every error is negative. */
#ifndef HERD_STATUS_H
#define HERD_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#define HERD_STATUS_LIST(X)                                                   \
    X(HERD_OK, 0, "success")                                                  \
    X(HERD_ERR_INVALID_ARG, -1, "invalid argument")                           \
    X(HERD_ERR_NO_MEMORY, -2, "out of memory")                                \
    X(HERD_ERR_UNSUPPORTED, -3, "operation not supported")                    \
    X(HERD_ERR_NOT_FOUND, -4, "not found")                                    \
    X(HERD_ERR_TIMEOUT, -5, "timed out")                                      \
    X(HERD_ERR_IO, -6, "input/output error")                                  \
    X(HERD_ERR_PARSE, -7, "malformed input")                                  \
    X(HERD_ERR_PEER_FAILED, -8, "peer process failed")                        \
    X(HERD_ERR_HANG, -9, "hang detected")                                     \
    X(HERD_ERR_MISMATCH, -10, "collective mismatch between ranks")            \
    X(HERD_ERR_OVERFLOW, -11, "size overflow")                                \
    X(HERD_ERR_NO_DEVICE, -12, "no usable device")                            \
    X(HERD_ERR_INTERNAL, -13, "internal error")                               \
    X(HERD_ERR_CLOSED, -14, "connection closed")                              \
    X(HERD_ERR_AUTH, -15, "authentication failed")                            \
    X(HERD_ERR_BUSY, -16, "resource busy")                                    \
    X(HERD_ERR_ABORTED, -17, "operation aborted")                             \
    X(HERD_ERR_RANK_EXITED, -18, "rank exited or died")

typedef enum herd_status {
#define HERD_STATUS_ENUM_(name, value, text) name = value,
    HERD_STATUS_LIST(HERD_STATUS_ENUM_)
#undef HERD_STATUS_ENUM_
} herd_status_t;

/* A static, human-readable string for any status; "unknown status" for a
 * value outside the list. Never NULL. */
const char *herd_status_string(herd_status_t status);

/* The enumerator's name ("HERD_ERR_TIMEOUT"), for logs and JSON. */
const char *herd_status_name(herd_status_t status);

#ifdef __cplusplus
}
#endif
#endif
