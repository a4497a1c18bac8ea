/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The methods Usage and Share (usage-report.c), over the accounting (usage.c). */

#include <json-c/json.h>

#include "server.h"

typedef struct Manager Manager;

/* Answered later, off the loop, when call is given (NULL: now, as unit tests call it). */
json_object *manager_method_usage(Manager *m, Call *call, const Peer *peer, json_object *params);
json_object *manager_method_share(Manager *m, Call *call, const Peer *peer, json_object *params);
