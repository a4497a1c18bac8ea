/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>

#include "daemon/authz.h"

#define OPERATORS 600
#define OWNER 1000
#define OTHER 1001

static const gid_t op_supplementary[] = { 100, OPERATORS };
static const gid_t plain_supplementary[] = { 100, 27 };

static const AuthzPeer root = { .uid = 0, .gid = 0 };
static const AuthzPeer owner = { .uid = OWNER, .gid = OWNER, .groups = plain_supplementary, .n_groups = 2 };
static const AuthzPeer other = { .uid = OTHER, .gid = OTHER };
static const AuthzPeer op_primary = { .uid = 1002, .gid = OPERATORS };
static const AuthzPeer op_supp = { .uid = 1003, .gid = 1003, .groups = op_supplementary, .n_groups = 2 };

/* Per action, what each kind of peer gets: owner (policy without user suspend), owner
 * (policy with it), another user, an admin. */
enum {
        ADMIN_HELD = 1 << 0,
        ADMIN_SUSPENDED = 1 << 1,
        PROJECT_OWNERS = 1 << 2,        /* the project's group is one the owner is in */
        PROJECT_FOREIGN = 1 << 3,       /* a group nobody here is in */
        PROJECT_LISTED = 1 << 4,        /* Members= of a project file names the peer */
        QUEUE_ALLOWED = 1 << 5,         /* the queue's AllowGroups=/AllowProjects= let the job in */
        PROJECT_DEFAULT = 1 << 6,       /* DefaultFor= of a project file names the owner */
};
static const struct {
        AuthzAction action;
        unsigned job;
        int owner, owner_may_suspend, other, admin;
        bool root_only; /* admin is root's; the operator group gets -EPERM */
} table[] = {
        { AUTHZ_SUBMIT, false, 0, 0, 0, 0 },
        { AUTHZ_LIST, false, 0, 0, 0, 0 },
        { AUTHZ_SHOW_DETAILS, false, 0, 0, -EPERM, 0 },
        { AUTHZ_CANCEL, false, 0, 0, -EPERM, 0 },
        { AUTHZ_SIGNAL, false, 0, 0, -EPERM, 0 },
        { AUTHZ_HOLD, false, 0, 0, -EPERM, 0 },
        { AUTHZ_RELEASE, false, 0, 0, -EPERM, 0 },
        { AUTHZ_RELEASE, ADMIN_HELD, -EPERM, -EPERM, -EPERM, 0 },
        { AUTHZ_SUSPEND, false, -EPERM, 0, -EPERM, 0 },
        { AUTHZ_RESUME, false, -EPERM, 0, -EPERM, 0 },
        { AUTHZ_RESUME, ADMIN_SUSPENDED, -EPERM, -EPERM, -EPERM, 0 },
        { AUTHZ_SUSPEND, ADMIN_SUSPENDED, -EPERM, 0, -EPERM, 0 },
        { AUTHZ_REQUEUE, false, 0, 0, -EPERM, 0 },
        { AUTHZ_WAIT, false, 0, 0, -EPERM, 0 },
        { AUTHZ_LOGS, false, 0, 0, -EPERM, 0 },
        { AUTHZ_RELOAD, false, -EPERM, -EPERM, -EPERM, 0 },
        { AUTHZ_SET_PRIORITY, false, -EPERM, -EPERM, -EPERM, 0 },
        { AUTHZ_LOWER_PRIORITY, false, 0, 0, -EPERM, 0 },
        { AUTHZ_USE_PROJECT, PROJECT_OWNERS, 0, 0, -EPERM, 0 },
        { AUTHZ_USE_PROJECT, PROJECT_FOREIGN, -EPERM, -EPERM, -EPERM, 0 },
        { AUTHZ_USE_PROJECT, false, -EPERM, -EPERM, -EPERM, 0 }, /* no such group */
        /* The caller computes "listed" for the submitter, the job's owner. */
        { AUTHZ_USE_PROJECT, PROJECT_LISTED, 0, 0, -EPERM, 0 },
        /* DefaultFor= is the administrator's choice for the user, member or not. */
        { AUTHZ_USE_PROJECT, PROJECT_DEFAULT, 0, 0, -EPERM, 0 },
        { AUTHZ_USE_PROJECT, PROJECT_DEFAULT | PROJECT_FOREIGN, 0, 0, -EPERM, 0 },
        { AUTHZ_USE_QUEUE, QUEUE_ALLOWED, 0, 0, -EPERM, 0 },
        { AUTHZ_USE_QUEUE, false, -EPERM, -EPERM, -EPERM, 0 },
        /* Usage: one's own; a project's, to its members (listed, or in its group). */
        { AUTHZ_VIEW_USAGE, false, 0, 0, -EPERM, 0 },
        { AUTHZ_VIEW_USAGE, PROJECT_LISTED, 0, 0, 0, 0 },
        { AUTHZ_VIEW_USAGE, PROJECT_OWNERS, 0, 0, -EPERM, 0 },
        { AUTHZ_VIEW_USAGE, PROJECT_FOREIGN, 0, 0, -EPERM, 0 },
        /* The per-user bounds (MaxJobsPerUser= ...) and the connection limits: root is not
         * bound, the operator group is, and no job changes that. */
        { AUTHZ_EXCEED_LIMITS, false, -EPERM, -EPERM, -EPERM, 0, true },
        { AUTHZ_EXCEED_LIMITS, ADMIN_HELD | PROJECT_OWNERS | QUEUE_ALLOWED, -EPERM, -EPERM, -EPERM, 0, true },
};

static void test_table(void **state) {
        const AuthzPolicy strict = { .have_operator_gid = true, .operator_gid = OPERATORS };
        const AuthzPolicy lenient = { .have_operator_gid = true, .operator_gid = OPERATORS, .users_may_suspend = true };
        const AuthzPeer *admins[] = { &root, &op_primary, &op_supp };
        bool seen[_AUTHZ_ACTION_MAX] = {};

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const unsigned f = table[i].job;
                const AuthzJob job = { .owner_uid = OWNER, .project = "p",
                                       .held_by_admin = f & ADMIN_HELD,
                                       .suspended_by_admin = f & ADMIN_SUSPENDED,
                                       .have_project_gid = f & (PROJECT_OWNERS | PROJECT_FOREIGN),
                                       .project_gid = f & PROJECT_OWNERS ? 100 : 555,
                                       .project_member = f & PROJECT_LISTED,
                                       .project_default = f & PROJECT_DEFAULT,
                                       .queue_allowed = f & QUEUE_ALLOWED };
                AuthzAction a = table[i].action;

                fprintf(stderr, "%s (job flags %u)\n", authz_action_to_string(a), f);
                seen[a] = true;
                assert_int_equal(authz_check(&owner, a, &job, &strict), table[i].owner);
                assert_int_equal(authz_check(&owner, a, &job, &lenient), table[i].owner_may_suspend);
                assert_int_equal(authz_check(&other, a, &job, &strict), table[i].other);
                assert_int_equal(authz_check(&other, a, &job, &lenient), table[i].other);
                for (size_t j = 0; j < ELEMENTSOF(admins); j++) {
                        int want = table[i].root_only && admins[j] != &root ? -EPERM : table[i].admin;
                        assert_int_equal(authz_check(admins[j], a, &job, &strict), want);
                        assert_int_equal(authz_check(admins[j], a, &job, &lenient), want);
                }
        }
        for (int a = 0; a < _AUTHZ_ACTION_MAX; a++)
                assert_true(seen[a]);
}

static void test_admin_detection(void **state) {
        const AuthzPolicy none = {};
        const AuthzPolicy ops = { .have_operator_gid = true, .operator_gid = OPERATORS };
        /* gid 0 configured as "no operator group" must not make everyone in group 0 admin
         * unless asked for. */
        const AuthzPeer gid0 = { .uid = 5, .gid = 0 };

        assert_true(authz_peer_is_admin(&root, &none));
        assert_true(authz_peer_is_admin(&root, NULL));
        assert_false(authz_peer_is_admin(&op_primary, &none));
        assert_false(authz_peer_is_admin(&op_supp, &none));
        assert_false(authz_peer_is_admin(&gid0, &none));
        assert_true(authz_peer_is_admin(&op_primary, &ops));
        assert_true(authz_peer_is_admin(&op_supp, &ops));
        assert_false(authz_peer_is_admin(&owner, &ops));
        assert_false(authz_peer_is_admin(NULL, &ops));
}

static void test_bad_calls(void **state) {
        const AuthzPolicy p = {};

        /* Job-scoped actions need the job. */
        assert_int_equal(authz_check(&owner, AUTHZ_CANCEL, NULL, &p), -EINVAL);
        assert_int_equal(authz_check(&root, AUTHZ_SHOW_DETAILS, NULL, &p), -EINVAL);
        assert_int_equal(authz_check(&root, AUTHZ_VIEW_USAGE, NULL, &p), -EINVAL);
        assert_int_equal(authz_check(&owner, AUTHZ_SUBMIT, NULL, &p), 0);
        assert_int_equal(authz_check(&owner, AUTHZ_LIST, NULL, &p), 0);
        assert_int_equal(authz_check(&owner, AUTHZ_RELOAD, NULL, &p), -EPERM);
        assert_int_equal(authz_check(&root, AUTHZ_RELOAD, NULL, &p), 0);
        assert_int_equal(authz_check(NULL, AUTHZ_LIST, NULL, &p), -EINVAL);
        assert_int_equal(authz_check(&owner, _AUTHZ_ACTION_MAX, NULL, &p), -EINVAL);
        /* No policy at all: root only, owners still act on their own jobs. */
        {
                const AuthzJob job = { .owner_uid = OWNER };
                assert_int_equal(authz_check(&owner, AUTHZ_CANCEL, &job, NULL), 0);
                assert_int_equal(authz_check(&owner, AUTHZ_SUSPEND, &job, NULL), -EPERM);
        }
        assert_int_equal(authz_action_from_string("set-priority"), AUTHZ_SET_PRIORITY);
        /* Without a job nor a policy, as server.c and check_user_limits() ask it. */
        assert_int_equal(authz_check(&root, AUTHZ_EXCEED_LIMITS, NULL, NULL), 0);
        assert_int_equal(authz_check(&owner, AUTHZ_EXCEED_LIMITS, NULL, NULL), -EPERM);
}

static void test_admin_action(void **state) {
        const AuthzPolicy ops = { .have_operator_gid = true, .operator_gid = OPERATORS };
        const AuthzJob mine = { .owner_uid = OWNER }, ops_own = { .owner_uid = 1003 };

        /* An admin holding somebody else's job places an admin hold; on their own job, a
         * user hold; a user never does. */
        assert_true(authz_is_admin_action(&op_supp, &mine, &ops));
        assert_true(authz_is_admin_action(&root, &mine, &ops));
        assert_false(authz_is_admin_action(&op_supp, &ops_own, &ops));
        assert_false(authz_is_admin_action(&owner, &mine, &ops));
        assert_false(authz_is_admin_action(&op_supp, &mine, NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_admin_detection),
                cmocka_unit_test(test_bad_calls),
                cmocka_unit_test(test_admin_action),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
