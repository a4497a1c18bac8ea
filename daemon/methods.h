/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The methods (methods.c), for the server's ops table. */

#include "server.h"

extern const ServerOps manager_server_ops;
