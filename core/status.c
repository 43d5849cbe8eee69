/* core/status.c - strings of the status enum, generated from its list. */
#include <herd/status.h>

const char *herd_status_string(herd_status_t status)
{
    switch (status) {
#define HERD_STATUS_STR_(name, value, text)                                   \
    case name:                                                                \
        return text;
        HERD_STATUS_LIST(HERD_STATUS_STR_)
#undef HERD_STATUS_STR_
    }
    return "unknown status";
}

const char *herd_status_name(herd_status_t status)
{
    switch (status) {
#define HERD_STATUS_NAME_(name, value, text)                                  \
    case name:                                                                \
        return #name;
        HERD_STATUS_LIST(HERD_STATUS_NAME_)
#undef HERD_STATUS_NAME_
    }
    return "HERD_STATUS_UNKNOWN";
}
