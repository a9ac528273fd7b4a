// A worker's job policy: what a job taken from the queue may make the
// worker do. Checked on the parsed pipeline before anything runs.
//
// A policy file is a key file (GKeyFile, INI syntax), every key optional:
//
//   [policy]
//   root = /srv/reel          every file a job names resolves beneath it
//                             (default: the worker's working directory)
//   elements = source;decode;infer;detect;metasink
//                             the elements a job may use (default: all)
//   test-hooks = false        identity's error-after and sleep-us, fakesink's
//                             delay-us (default: refused)
//   schemes = rtsp;http       URL schemes sources and sinks may open
//                             (default: none, files only)
//   hosts = cam1.lan;10.0.0.7 hosts those URLs may name (default: *, any)
//   subjects = reel.meta.>    NATS subjects natssink may publish on over the
//                             worker's connection (default: reel.meta.>)
//   env = MQTT_PASSWORD       environment variables a job may name (mqttsink
//                             password-env; default: none)
//   zoo = true                `infer model=NAME` from the model zoo (default: true)
//   max-run = 1h              a file job running longer fails (default: 1h)
//   stall = 60s               no frame reaching a sink for this long fails the
//                             attempt, to be retried (default: 60s)
#ifndef REEL_FLEET_POLICY_H
#define REEL_FLEET_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "reel/reel.h"

typedef struct fleet_policy fleet_policy;

// The policy in `path`, or the default one when path is NULL. NULL with
// *error set (REEL_EINVAL: a key or value that is wrong, naming it).
fleet_policy *fleet_policy_load(const char *path, GError **error);
void fleet_policy_free(fleet_policy **pol);
int64_t fleet_policy_max_run_ms(const fleet_policy *pol);
int64_t fleet_policy_stall_ms(const fleet_policy *pol);
// One line saying what the policy allows, for the worker's log.
char *fleet_policy_describe(const fleet_policy *pol);

// What a checked pipeline holds on to: the folders its paths were opened in.
typedef struct fleet_policy_hold fleet_policy_hold;

// Checks every element and set property of `p` (parsed, not prepared).
// Each file a property names is opened beneath the root and the property
// set to a name inside that opened folder ("/proc/self/fd/N/out.mp4"), so
// a link or a renamed folder cannot move it out afterwards; *held keeps
// those folders open until fleet_policy_hold_free(), after the pipeline is
// destroyed. On a breach returns REEL_EINVAL with *error saying which
// element, property and value, and which rule.
int fleet_policy_apply(const fleet_policy *pol, reel_pipeline *p, fleet_policy_hold **held, GError **error);
// `text` with each held name written back as the job wrote it (errors).
char *fleet_policy_hold_unmap(const fleet_policy_hold *held, const char *text);
void fleet_policy_hold_free(fleet_policy_hold **held);

// "500ms", "5s", "2m", "1h" (s when no unit) as milliseconds, 0 < t <= 1 day.
bool fleet_parse_time_ms(const char *text, int64_t *out);

#endif
