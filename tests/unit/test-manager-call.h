/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* For the daemon's tests that drive a Manager through its methods, without a socket.
 * Include after <cmocka.h> and the daemon's headers (manager.h, server.h). */

#include <json-c/json.h>

#include "daemon/methods.h"

/* Calls a method as uid (its own gid); returns the reply (owned). */
static inline json_object *call(Manager *m, uid_t uid, CorralMethod method, const char *params) {
        Peer peer = { .uid = uid, .gid = uid };
        json_object *p = json_tokener_parse(params), *reply = NULL;

        assert_non_null(p);
        assert_int_equal(manager_server_ops.dispatch(m, NULL, &peer, method, p, &reply), 0);
        json_object_put(p);
        assert_non_null(reply);
        return reply;
}
