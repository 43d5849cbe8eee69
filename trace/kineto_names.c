/* trace/kineto_names.c - PyTorch's names in profiler traces mapped to
 * herd's: dtypes as the trace writes them ("float", "c10::Half",
 * "BFloat16"), collectives of c10d ops, gloo annotations and
 * record_param_comms, and NCCL kernel names. */
#include <stdio.h>
#include <string.h>

#include "trace/kineto.h"

int kineto_dtype(const char *name, herd_dtype_t *out)
{
    static const struct {
        const char *name;
        herd_dtype_t dt;
    } map[] = {
        {"float", HERD_FLOAT32},
        {"Float", HERD_FLOAT32},
        {"double", HERD_FLOAT64},
        {"Double", HERD_FLOAT64},
        {"c10::Half", HERD_FLOAT16},
        {"Half", HERD_FLOAT16},
        {"c10::BFloat16", HERD_BFLOAT16},
        {"BFloat16", HERD_BFLOAT16},
        {"long int", HERD_INT64},
        {"long", HERD_INT64},
        {"Long", HERD_INT64},
        {"int64_t", HERD_INT64},
        {"int", HERD_INT32},
        {"Int", HERD_INT32},
        {"unsigned char", HERD_UINT8},
        {"Byte", HERD_UINT8},
        {"bool", HERD_UINT8},
        {"Bool", HERD_UINT8},
        {"signed char", HERD_INT8},
        {"Char", HERD_INT8},
    };
    for (size_t i = 0; name && i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(name, map[i].name)) {
            *out = map[i].dt;
            return 1;
        }
    return 0;
}

int kineto_coll(const char *name, herd_coll_t *out)
{
    /* c10d op / gloo annotation / record_param_comms names, longest
     * first where one is a prefix of another */
    static const struct {
        const char *name;
        herd_coll_t c;
    } map[] = {
        {"allreduce", HERD_COLL_ALL_REDUCE},
        {"all_reduce", HERD_COLL_ALL_REDUCE},
        {"allreduce_coalesced", HERD_COLL_ALL_REDUCE},
        {"broadcast", HERD_COLL_BROADCAST},
        {"allgather", HERD_COLL_ALL_GATHER},
        {"all_gather", HERD_COLL_ALL_GATHER},
        {"_allgather_base", HERD_COLL_ALL_GATHER},
        {"allgather_into_tensor_coalesced", HERD_COLL_ALL_GATHER},
        {"all_gather_into_tensor", HERD_COLL_ALL_GATHER},
        {"all_gather_into_tensor_coalesced", HERD_COLL_ALL_GATHER},
        {"reduce_scatter", HERD_COLL_REDUCE_SCATTER},
        {"_reduce_scatter_base", HERD_COLL_REDUCE_SCATTER},
        {"reduce_scatter_tensor", HERD_COLL_REDUCE_SCATTER},
        {"reduce_scatter_tensor_coalesced", HERD_COLL_REDUCE_SCATTER},
        {"alltoall", HERD_COLL_ALL_TO_ALL},
        {"alltoall_base", HERD_COLL_ALL_TO_ALL},
        {"all_to_all", HERD_COLL_ALL_TO_ALL},
        {"reduce", HERD_COLL_REDUCE},
        {"gather", HERD_COLL_GATHER},
        {"scatter", HERD_COLL_SCATTER},
        {"barrier", HERD_COLL_BARRIER},
        {"send", HERD_COLL_SEND},
        {"recv", HERD_COLL_RECV},
        {"recv_", HERD_COLL_RECV},
        {"recv_anysource", HERD_COLL_RECV},
    };
    if (!name)
        return 0;
    if (!strncmp(name, "c10d::", 6))
        name += 6;
    else if (!strncmp(name, "gloo:", 5))
        name += 5;
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", name);
    size_t n = strlen(buf);
    if (n > 1 && buf[n - 1] == '_' && strcmp(buf, "recv_"))
        buf[n - 1] = '\0'; /* allreduce_ -> allreduce */
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(buf, map[i].name)) {
            *out = map[i].c;
            return 1;
        }
    return 0;
}

/* The collective of an NCCL kernel name (ncclDevKernel_AllReduce_Sum_f32_
 * RING_LL, ncclKernel_Broadcast_RING_LL_Sum_int8_t, ...). */
int kineto_nccl_kernel_coll(const char *name, herd_coll_t *out)
{
    static const struct {
        const char *part;
        herd_coll_t c;
    } map[] = {
        {"AllReduce", HERD_COLL_ALL_REDUCE},
        {"AllGather", HERD_COLL_ALL_GATHER},
        {"ReduceScatter", HERD_COLL_REDUCE_SCATTER},
        {"Broadcast", HERD_COLL_BROADCAST},
        {"Reduce", HERD_COLL_REDUCE},
        {"SendRecv", HERD_COLL_SEND},
        {"Send", HERD_COLL_SEND},
        {"Recv", HERD_COLL_RECV},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strstr(name, map[i].part)) {
            *out = map[i].c;
            return 1;
        }
    return 0;
}

int kineto_is_nccl_kernel(const char *name)
{
    return !strncmp(name, "ncclKernel_", 11) ||
           !strncmp(name, "ncclDevKernel_", 14);
}
