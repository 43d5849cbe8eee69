/* tests/unit_install.c - `make install` gives another C project what it
 * needs: headers, libraries, the herd binary, a pkg-config file and a
 * CMake package. Installs this build into a temporary prefix and builds
 * a small program against it both ways. */
#include <stdlib.h>
#include <string.h>

#include <herd/herd.h>

#include "support/testutil.h"

static char prefix[512];

static const char prog[] =
    "#include <herd/herd.h>\n#include <stdio.h>\n"
    "int main(void) { printf(\"%s|%s\\n\", HERD_VERSION_STRING,\n"
    "  herd_status_string(HERD_ERR_TIMEOUT)); return 0; }\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    const char *build = getenv("HERD_BUILD_DIR");
    char *dir = tu_tmpdir(), cmd[2048], *out = NULL;
    ck_assert_ptr_nonnull(build);
    snprintf(prefix, sizeof(prefix), "%s", dir);
    free(dir);
    snprintf(cmd, sizeof(cmd), "cmake --install '%s' --prefix '%s/usr' 2>&1",
             build, prefix);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    free(out);
}

START_TEST(installed_files)
{
    setup();
    const char *files[] = {"usr/include/herd/herd.h", "usr/bin/herd",
                           "usr/lib/pkgconfig/herd.pc",
                           "usr/lib/cmake/herd/herdConfig.cmake",
                           "usr/share/herd/plots/gantt.gp"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", prefix, files[i]);
        FILE *f = fopen(path, "r");
        ck_assert_msg(f != NULL, "missing %s", files[i]);
        fclose(f);
    }
}
END_TEST

START_TEST(pkg_config_consumer)
{
    setup();
    char src[1024], cmd[4096], *out = NULL;
    snprintf(src, sizeof(src), "%s/main.c", prefix);
    write_file(src, prog);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && PKG_CONFIG_PATH='%s/usr/lib/pkgconfig' && "
             "export PKG_CONFIG_PATH && cc main.c $(pkg-config --cflags "
             "--libs herd) -o pc 2>&1 && LD_LIBRARY_PATH='%s/usr/lib' ./pc",
             prefix, prefix, prefix);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, HERD_VERSION_STRING "|timed out"));
    free(out);
}
END_TEST

START_TEST(cmake_consumer)
{
    setup();
    char path[1024], cmd[4096], *out = NULL;
    snprintf(path, sizeof(path), "%s/main.c", prefix);
    write_file(path, prog);
    snprintf(path, sizeof(path), "%s/CMakeLists.txt", prefix);
    write_file(path, "cmake_minimum_required(VERSION 3.25)\n"
                     "project(consumer C)\nfind_package(herd REQUIRED)\n"
                     "add_executable(consumer main.c)\n"
                     "target_link_libraries(consumer PRIVATE herd::herd_static)\n");
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && cmake -S . -B b -DCMAKE_PREFIX_PATH='%s/usr' >/dev/null"
             " 2>&1 && cmake --build b >/dev/null 2>&1 && ./b/consumer",
             prefix, prefix);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "|timed out"));
    free(out);
}
END_TEST

/* Before installing: the build tree's herd-uninstalled.pc and CMake
 * package give the same program (pkg-config prefers -uninstalled files). */
START_TEST(build_tree_consumers)
{
    const char *build = getenv("HERD_BUILD_DIR");
    ck_assert_ptr_nonnull(build);
    char *dir = tu_tmpdir(), path[1024], cmd[4096], *out = NULL;
    snprintf(path, sizeof(path), "%s/main.c", dir);
    write_file(path, prog);
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && PKG_CONFIG_PATH='%s' && export PKG_CONFIG_PATH && "
             "pkg-config --cflags herd | grep -q '/include' && "
             "cc main.c $(pkg-config --cflags --libs herd) -o pc 2>&1 && ./pc",
             dir, build);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, HERD_VERSION_STRING "|timed out"));
    free(out);
    snprintf(path, sizeof(path), "%s/CMakeLists.txt", dir);
    write_file(path, "cmake_minimum_required(VERSION 3.25)\n"
                     "project(consumer C)\nfind_package(herd REQUIRED)\n"
                     "add_executable(consumer main.c)\n"
                     "target_link_libraries(consumer PRIVATE herd::herd)\n");
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && cmake -S . -B b -Dherd_DIR='%s' >/dev/null 2>&1 && "
             "cmake --build b >/dev/null 2>&1 && ./b/consumer",
             dir, build);
    ck_assert_int_eq(tu_run(cmd, &out), 0);
    ck_assert_ptr_nonnull(strstr(out, "|timed out"));
    free(out);
    free(dir);
}
END_TEST

int main(void)
{
    /* A sanitizer build's library needs the sanitizer runtime in every
     * program that loads it; the plain build covers installation. */
    if (getenv("HERD_SANITIZED")) {
        fprintf(stderr, "skip: sanitizer build\n");
        return 77;
    }
    Suite *s = suite_create("unit_install");
    TCase *tc = tcase_create("install");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, installed_files);
    tcase_add_test(tc, pkg_config_consumer);
    tcase_add_test(tc, cmake_consumer);
    tcase_add_test(tc, build_tree_consumers);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
