/* tests/unit_types.c - status strings and the names, sizes and parsing of
 * dtypes, reduce ops, collectives and algorithms (include/herd/types.h,
 * include/herd/status.h). */
#include <string.h>
#include <strings.h>

#include <herd/herd.h>

#include "support/testutil.h"

static const herd_status_t all_statuses[] = {
#define X_(name, value, text) name,
    HERD_STATUS_LIST(X_)
#undef X_
};
enum { NSTATUS = sizeof all_statuses / sizeof all_statuses[0] };

START_TEST(test_status_strings)
{
    ck_assert_int_eq(HERD_OK, 0);
    ck_assert_str_eq(herd_status_string(HERD_OK), "success");
    ck_assert_str_eq(herd_status_name(HERD_ERR_TIMEOUT), "HERD_ERR_TIMEOUT");
    ck_assert_str_eq(herd_status_string(HERD_ERR_INVALID_ARG),
                     "invalid argument");
    for (int i = 0; i < NSTATUS; i++) {
        herd_status_t st = all_statuses[i];
        if (i > 0)
            ck_assert_int_lt(st, 0); /* every error is negative */
        const char *s = herd_status_string(st), *n = herd_status_name(st);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_gt(strlen(s), 0);
        ck_assert_str_ne(s, "unknown status");
        ck_assert_msg(strncmp(n, "HERD_", 5) == 0, "name %s", n);
        for (int j = 0; j < i; j++) {
            ck_assert_int_ne(st, all_statuses[j]);
            ck_assert_str_ne(s, herd_status_string(all_statuses[j]));
            ck_assert_str_ne(n, herd_status_name(all_statuses[j]));
        }
    }
}
END_TEST

START_TEST(test_status_unknown)
{
    ck_assert_str_eq(herd_status_string((herd_status_t)-9999),
                     "unknown status");
    ck_assert_str_eq(herd_status_string((herd_status_t)7), "unknown status");
    ck_assert_str_eq(herd_status_name((herd_status_t)-9999),
                     "HERD_STATUS_UNKNOWN");
}
END_TEST

START_TEST(test_dtype_names_and_sizes)
{
    static const struct {
        herd_dtype_t dt;
        const char *name;
        size_t size;
        int integer;
    } want[] = {
        {HERD_INT8, "int8", 1, 1},       {HERD_UINT8, "uint8", 1, 1},
        {HERD_INT32, "int32", 4, 1},     {HERD_INT64, "int64", 8, 1},
        {HERD_FLOAT16, "float16", 2, 0}, {HERD_BFLOAT16, "bfloat16", 2, 0},
        {HERD_FLOAT32, "float32", 4, 0}, {HERD_FLOAT64, "float64", 8, 0},
    };
    ck_assert_int_eq(HERD_DTYPE_COUNT, 8);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_str_eq(herd_dtype_name(want[i].dt), want[i].name);
        ck_assert_uint_eq(herd_dtype_size(want[i].dt), want[i].size);
        ck_assert_int_eq(herd_dtype_is_integer(want[i].dt), want[i].integer);
    }
    ck_assert_uint_eq(herd_dtype_size(HERD_DTYPE_COUNT), 0);
    ck_assert_uint_eq(herd_dtype_size((herd_dtype_t)-1), 0);
    ck_assert_str_eq(herd_dtype_name(HERD_DTYPE_COUNT), "unknown");
    ck_assert_int_eq(herd_dtype_is_integer(HERD_DTYPE_COUNT), 0);
}
END_TEST

START_TEST(test_enum_names)
{
    ck_assert_str_eq(herd_op_name(HERD_SUM), "sum");
    ck_assert_str_eq(herd_op_name(HERD_AVG), "avg");
    ck_assert_str_eq(herd_op_name(HERD_PRODUCT), "prod");
    ck_assert_str_eq(herd_op_name(HERD_BXOR), "bxor");
    ck_assert_str_eq(herd_op_name(HERD_OP_COUNT), "unknown");
    ck_assert_str_eq(herd_coll_name(HERD_COLL_ALL_REDUCE), "all_reduce");
    ck_assert_str_eq(herd_coll_name(HERD_COLL_REDUCE_SCATTER),
                     "reduce_scatter");
    ck_assert_str_eq(herd_coll_name(HERD_COLL_RECV), "recv");
    ck_assert_str_eq(herd_coll_name(HERD_COLL_COUNT), "unknown");
    ck_assert_str_eq(herd_algo_name(HERD_ALGO_RING), "ring");
    ck_assert_str_eq(herd_algo_name(HERD_ALGO_RHD), "rhd");
    ck_assert_str_eq(herd_algo_name(HERD_ALGO_NCCL), "nccl");
    ck_assert_str_eq(herd_algo_name((herd_algo_t)-3), "unknown");
}
END_TEST

/* Every name parses back to its value, in any case. */
#define ROUND_TRIP(count, name_fn, parse_fn, type)                             \
    for (int i = 0; i < (count); i++) {                                        \
        char upper[64];                                                        \
        const char *n = name_fn((type)i);                                      \
        type v = (type)-1;                                                     \
        ck_assert_int_eq(parse_fn(n, &v), HERD_OK);                            \
        ck_assert_int_eq(v, i);                                                \
        size_t k = 0;                                                          \
        for (; n[k] && k + 1 < sizeof upper; k++)                              \
            upper[k] = (char)(n[k] >= 'a' && n[k] <= 'z' ? n[k] - 32 : n[k]);  \
        upper[k] = '\0';                                                       \
        v = (type)-1;                                                          \
        ck_assert_int_eq(parse_fn(upper, &v), HERD_OK);                        \
        ck_assert_int_eq(v, i);                                                \
    }

START_TEST(test_parse_round_trip)
{
    ROUND_TRIP(HERD_DTYPE_COUNT, herd_dtype_name, herd_dtype_parse,
               herd_dtype_t);
    ROUND_TRIP(HERD_OP_COUNT, herd_op_name, herd_op_parse, herd_op_t);
    ROUND_TRIP(HERD_COLL_COUNT, herd_coll_name, herd_coll_parse, herd_coll_t);
    ROUND_TRIP(HERD_ALGO_COUNT, herd_algo_name, herd_algo_parse, herd_algo_t);
}
END_TEST

START_TEST(test_parse_aliases)
{
    static const struct {
        const char *name;
        herd_dtype_t dt;
    } dts[] = {{"fp32", HERD_FLOAT32},  {"float", HERD_FLOAT32},
               {"half", HERD_FLOAT16},  {"fp16", HERD_FLOAT16},
               {"bf16", HERD_BFLOAT16}, {"double", HERD_FLOAT64},
               {"int", HERD_INT32},     {"Float32", HERD_FLOAT32}};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        herd_dtype_t dt = HERD_DTYPE_COUNT;
        ck_assert_int_eq(herd_dtype_parse(dts[i].name, &dt), HERD_OK);
        ck_assert_msg(dt == dts[i].dt, "%s parsed as %s", dts[i].name,
                      herd_dtype_name(dt));
    }
    herd_op_t op = HERD_SUM;
    ck_assert_int_eq(herd_op_parse("product", &op), HERD_OK);
    ck_assert_int_eq(op, HERD_PRODUCT);
    ck_assert_int_eq(herd_op_parse("PROD", &op), HERD_OK);
    ck_assert_int_eq(op, HERD_PRODUCT);
    herd_coll_t coll = HERD_COLL_BARRIER;
    ck_assert_int_eq(herd_coll_parse("allreduce", &coll), HERD_OK);
    ck_assert_int_eq(coll, HERD_COLL_ALL_REDUCE);
    herd_algo_t algo = HERD_ALGO_AUTO;
    ck_assert_int_eq(herd_algo_parse("halving_doubling", &algo), HERD_OK);
    ck_assert_int_eq(algo, HERD_ALGO_RHD);
}
END_TEST

/* Unknown names: NOT_FOUND; NULL: INVALID_ARG; *out untouched. */
START_TEST(test_parse_errors)
{
    herd_dtype_t dt = HERD_INT64;
    ck_assert_int_eq(herd_dtype_parse("float128", &dt), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(herd_dtype_parse("", &dt), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(herd_dtype_parse("float3", &dt), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(herd_dtype_parse("float32 ", &dt), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(herd_dtype_parse(NULL, &dt), HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(dt, HERD_INT64);
    herd_op_t op = HERD_MAX;
    ck_assert_int_eq(herd_op_parse("average", &op), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(herd_op_parse(NULL, &op), HERD_ERR_INVALID_ARG);
    ck_assert_int_eq(op, HERD_MAX);
    herd_coll_t coll = HERD_COLL_SEND;
    ck_assert_int_eq(herd_coll_parse("all-reduce!", &coll), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(coll, HERD_COLL_SEND);
    herd_algo_t algo = HERD_ALGO_TREE;
    ck_assert_int_eq(herd_algo_parse("butterfly", &algo), HERD_ERR_NOT_FOUND);
    ck_assert_int_eq(algo, HERD_ALGO_TREE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("types");
    TCase *tc = tcase_create("types");
    tcase_add_test(tc, test_status_strings);
    tcase_add_test(tc, test_status_unknown);
    tcase_add_test(tc, test_dtype_names_and_sizes);
    tcase_add_test(tc, test_enum_names);
    tcase_add_test(tc, test_parse_round_trip);
    tcase_add_test(tc, test_parse_aliases);
    tcase_add_test(tc, test_parse_errors);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
