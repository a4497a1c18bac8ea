/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NSS cache against a fake NSS that counts its calls: an answer is reused until it
 * expires, a "none" for less long, a failure not at all, the table stays bounded, and
 * what it returns is a faithful copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/nss-cache.h"

static unsigned calls_pw, calls_grgid, calls_grnam;
static int fail_errno; /* set: the fake NSS fails with it */
static char members_0[] = "alice", members_1[] = "bob";
static char *members[] = { members_0, members_1, NULL };
static char name_alice[] = "alice", name_physics[] = "physics", x[] = "x", dir[] = "/home/alice", shell[] = "/bin/sh",
            gecos[] = "Alice";
static char group_name[64];

static struct passwd *fake_getpwuid(uid_t uid) {
        static struct passwd pw;

        calls_pw++;
        if (fail_errno) {
                errno = fail_errno;
                return NULL;
        }
        if (uid != 1000) {
                errno = ENOENT; /* as glibc may leave it from its nscd attempt */
                return NULL;
        }
        pw = (struct passwd) { .pw_name = name_alice, .pw_passwd = x, .pw_uid = 1000, .pw_gid = 100,
                               .pw_gecos = gecos, .pw_dir = dir, .pw_shell = shell };
        return &pw;
}

static struct group *fake_group(gid_t gid, const char *name) {
        static struct group gr;

        snprintf(group_name, sizeof group_name, "%s", name);
        gr = (struct group) { .gr_name = group_name, .gr_passwd = x, .gr_gid = gid, .gr_mem = members };
        return &gr;
}

static struct group *fake_getgrgid(gid_t gid) {
        calls_grgid++;
        return gid == 100 ? fake_group(100, name_physics) : NULL;
}

static struct group *fake_getgrnam(const char *name) {
        calls_grnam++;
        if (strncmp(name, "g", 1) == 0) /* g0, g1, ...: groups of their own */
                return fake_group(5000, name);
        return strcmp(name, "physics") == 0 ? fake_group(100, name) : NULL;
}

static unsigned calls_list;
static int n_list = 3; /* groups the fake database gives: group, then 1000.. */

static int fake_getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups) {
        int room = *ngroups;

        calls_list++;
        *ngroups = n_list;
        if (room < n_list)
                return -1;
        groups[0] = group;
        for (int i = 1; i < n_list; i++)
                groups[i] = (gid_t) (1000 + i + (strcmp(user, "alice") == 0 ? 0 : 500));
        return n_list;
}

static const NssOps fake_ops = { .getpwuid = fake_getpwuid, .getgrgid = fake_getgrgid, .getgrnam = fake_getgrnam,
                                 .getgrouplist = fake_getgrouplist };

static void test_reuse_and_expiry(void **state) {
        _cleanup_(nss_cache_freep) NssCache *c = nss_cache_new(&fake_ops);
        const struct passwd *pw;
        const struct group *gr;
        uint64_t t = 1000;

        assert_non_null(c);
        calls_pw = calls_grgid = calls_grnam = 0;
        fail_errno = 0;
        pw = nss_cache_getpwuid(c, 1000, t);
        assert_non_null(pw);
        assert_string_equal(pw->pw_name, "alice");
        assert_string_equal(pw->pw_dir, "/home/alice");
        assert_string_equal(pw->pw_shell, "/bin/sh");
        assert_int_equal(pw->pw_gid, 100);
        /* A copy: what NSS's storage holds next does not change it. */
        name_alice[0] = 'A';
        assert_string_equal(nss_cache_getpwuid(c, 1000, t + 1)->pw_name, "alice");
        name_alice[0] = 'a';
        assert_int_equal(calls_pw, 1);
        /* Reused up to its time to live, then asked again. */
        assert_non_null(nss_cache_getpwuid(c, 1000, t + NSS_CACHE_TTL_USEC - 1));
        assert_int_equal(calls_pw, 1);
        assert_non_null(nss_cache_getpwuid(c, 1000, t + NSS_CACHE_TTL_USEC));
        assert_int_equal(calls_pw, 2);

        /* None: remembered for the shorter time, with errno ENOENT. */
        errno = 0;
        assert_null(nss_cache_getpwuid(c, 4242, t));
        assert_int_equal(errno, ENOENT);
        assert_null(nss_cache_getpwuid(c, 4242, t + NSS_CACHE_NEGATIVE_TTL_USEC - 1));
        assert_int_equal(errno, ENOENT);
        assert_int_equal(calls_pw, 3);
        assert_null(nss_cache_getpwuid(c, 4242, t + NSS_CACHE_NEGATIVE_TTL_USEC));
        assert_int_equal(calls_pw, 4);

        /* A failure (LDAP down) is not remembered. */
        fail_errno = EIO;
        assert_null(nss_cache_getpwuid(c, 7, t));
        assert_int_equal(errno, EIO);
        assert_null(nss_cache_getpwuid(c, 7, t));
        assert_int_equal(calls_pw, 6);
        fail_errno = 0;

        /* Groups, by gid and by name, members included. */
        gr = nss_cache_getgrgid(c, 100, t);
        assert_non_null(gr);
        assert_string_equal(gr->gr_name, "physics");
        assert_string_equal(gr->gr_mem[1], "bob");
        assert_null(gr->gr_mem[2]);
        gr = nss_cache_getgrnam(c, "physics", t);
        assert_non_null(gr);
        assert_int_equal(gr->gr_gid, 100);
        assert_non_null(nss_cache_getgrnam(c, "physics", t + 1));
        assert_null(nss_cache_getgrnam(c, "chemistry", t));
        assert_null(nss_cache_getgrnam(c, "chemistry", t + 1));
        assert_int_equal(calls_grgid, 1);
        assert_int_equal(calls_grnam, 2);

        /* A reload forgets it all. */
        nss_cache_flush(c);
        assert_non_null(nss_cache_getpwuid(c, 1000, t));
        assert_int_equal(calls_pw, 7);

        /* No cache: NSS every time (corrald's own libc; just no crash for a NULL name). */
        assert_null(nss_cache_getgrnam(NULL, NULL, t));
}

/* Names come from requests: however many a user tries, the table stays bounded, and
 * answers stay right across the restart of the table. */
static void test_bounded(void **state) {
        _cleanup_(nss_cache_freep) NssCache *c = nss_cache_new(&fake_ops);
        char name[32];

        calls_grnam = 0;
        for (unsigned i = 0; i < 3 * NSS_CACHE_ENTRIES_MAX; i++) {
                const struct group *gr;
                snprintf(name, sizeof name, "g%u", i);
                gr = nss_cache_getgrnam(c, name, 1);
                assert_non_null(gr);
                assert_string_equal(gr->gr_name, name);
        }
        assert_int_equal(calls_grnam, 3 * NSS_CACHE_ENTRIES_MAX);
        /* The last one is still remembered. */
        assert_non_null(nss_cache_getgrnam(c, name, 2));
        assert_int_equal(calls_grnam, 3 * NSS_CACHE_ENTRIES_MAX);
}

/* A user's group list: reused for the same name and primary group, fetched again for
 * another of either, grown past the first guess of its size. */
static void test_group_list(void **state) {
        _cleanup_(nss_cache_freep) NssCache *c = nss_cache_new(&fake_ops);
        const gid_t *g;
        size_t n;

        calls_list = 0;
        n_list = 3;
        assert_int_equal(nss_cache_getgrouplist(c, "alice", 1000, 100, 10, &g, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(g[0], 100);
        assert_int_equal(g[2], 1002);
        assert_int_equal(nss_cache_getgrouplist(c, "alice", 1000, 100, 11, &g, &n), 0);
        assert_int_equal(calls_list, 1);
        /* Another primary group (the job's --gid), another name for the uid. */
        assert_int_equal(nss_cache_getgrouplist(c, "alice", 1000, 200, 12, &g, &n), 0);
        assert_int_equal(g[0], 200);
        assert_int_equal(nss_cache_getgrouplist(c, "alicia", 1000, 200, 13, &g, &n), 0);
        assert_int_equal(g[1], 1501);
        assert_int_equal(calls_list, 3);
        /* Expired: asked again, and a long list is fetched whole. */
        n_list = 200;
        assert_int_equal(nss_cache_getgrouplist(c, "alicia", 1000, 200, 13 + NSS_CACHE_TTL_USEC, &g, &n), 0);
        assert_int_equal(n, 200);
        assert_int_equal(g[199], 1000 + 199 + 500);
        n_list = 3;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reuse_and_expiry),
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_group_list),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
