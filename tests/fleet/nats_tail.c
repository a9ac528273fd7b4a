// A NATS subscriber for the fleet tests (Debian has no `nats` command):
//
//   nats_tail URL SUBJECT COUNT SILENCE_MS   prints "SUBJECT DATA" per message, one a line,
//                                            until COUNT (0: no limit) or SILENCE_MS without one
//   nats_tail URL --stream-count STREAM      prints how many messages a JetStream stream holds
//   nats_tail URL --stream-age STREAM        prints its messages' maximum age in ms (0: none)
//   nats_tail URL --stream-add STREAM SUBJ   makes a file-stored stream that keeps SUBJ's messages
//   nats_tail URL --stream-dump STREAM       prints "SUBJECT DATA" per message it holds, oldest first
//
// Before URL, for a server with TLS or a login: --ca FILE, --cert FILE --key
// FILE, --user NAME --password-file FILE (the file's first line), --creds FILE.
//
// It prints "ready" on standard error once subscribed. Exit 0, or 1 on an error.
#include <nats/nats.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, natsStatus s)
{
    fprintf(stderr, "nats_tail: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
}

static int stream_info(natsConnection *nc, const char *stream, bool age)
{
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = natsConnection_JetStream(&js, nc, NULL);
    if (s == NATS_OK)
        s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
    if (s == NATS_OK)
        printf("%llu\n", age ? (unsigned long long)(si->Config->MaxAge / 1000000)
                             : (unsigned long long)si->State.Msgs);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    return s == NATS_OK ? 0 : fail("stream info", s);
}

static int stream_add(natsConnection *nc, const char *stream, const char *subject)
{
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    const char *subjects[] = { subject };
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = stream;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    natsStatus s = natsConnection_JetStream(&js, nc, NULL);
    if (s == NATS_OK)
        s = js_AddStream(&si, js, &cfg, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    return s == NATS_OK ? 0 : fail("add stream", s);
}

static int stream_dump(natsConnection *nc, const char *stream)
{
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = natsConnection_JetStream(&js, nc, NULL);
    if (s == NATS_OK)
        s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
    uint64_t first = s == NATS_OK ? si->State.FirstSeq : 1, last = s == NATS_OK ? si->State.LastSeq : 0;
    for (uint64_t seq = first; s == NATS_OK && seq > 0 && seq <= last; seq++) {
        natsMsg *m = NULL;
        s = js_GetMsg(&m, js, stream, seq, NULL, &jerr);
        if (s == NATS_NOT_FOUND) { // a gap in the sequence: none here
            s = NATS_OK;
            continue;
        }
        if (s == NATS_OK)
            printf("%s %.*s\n", natsMsg_GetSubject(m), natsMsg_GetDataLength(m), natsMsg_GetData(m));
        natsMsg_Destroy(m);
    }
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    return s == NATS_OK ? 0 : fail("read stream", s);
}

static int tail(natsConnection *nc, const char *subject, long count, long silence_ms)
{
    natsSubscription *sub = NULL;
    natsStatus s = natsConnection_SubscribeSync(&sub, nc, subject);
    if (s == NATS_OK)
        s = natsConnection_Flush(nc);
    if (s != NATS_OK)
        return fail("subscribe", s);
    // No limit on what waits unread: a burst of frames must not be dropped.
    natsSubscription_SetPendingLimits(sub, -1, -1);
    fprintf(stderr, "ready\n");
    for (long n = 0; count == 0 || n < count; n++) {
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, silence_ms);
        if (s == NATS_TIMEOUT)
            break;
        if (s != NATS_OK)
            return fail("next message", s);
        printf("%s %.*s\n", natsMsg_GetSubject(m), natsMsg_GetDataLength(m), natsMsg_GetData(m));
        fflush(stdout);
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
    return 0;
}

typedef struct login {
    const char *ca, *cert, *key, *user, *password_file, *creds;
} login;

// Takes the leading options; returns how many words they were, -1 on a bad one.
static int parse_login(int argc, char **argv, login *l)
{
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i], "--stream-", 9) != 0; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (strcmp(o, "--ca") == 0)
            l->ca = v;
        else if (strcmp(o, "--cert") == 0)
            l->cert = v;
        else if (strcmp(o, "--key") == 0)
            l->key = v;
        else if (strcmp(o, "--user") == 0)
            l->user = v;
        else if (strcmp(o, "--password-file") == 0)
            l->password_file = v;
        else if (strcmp(o, "--creds") == 0)
            l->creds = v;
        else
            return -1;
    }
    return i - 1;
}

static natsStatus apply_login(natsOptions *opts, const login *l)
{
    natsStatus s = NATS_OK;
    if (l->ca)
        s = natsOptions_LoadCATrustedCertificates(opts, l->ca);
    if (s == NATS_OK && l->cert)
        s = natsOptions_LoadCertificatesChain(opts, l->cert, l->key);
    if (s == NATS_OK && l->creds)
        s = natsOptions_SetUserCredentialsFromFiles(opts, l->creds, NULL);
    if (s == NATS_OK && l->user) {
        char password[256] = "";
        FILE *f = l->password_file ? fopen(l->password_file, "r") : NULL;
        if (!f || !fgets(password, sizeof password, f))
            s = NATS_INVALID_ARG;
        if (f)
            fclose(f);
        password[strcspn(password, "\r\n")] = '\0';
        if (s == NATS_OK)
            s = natsOptions_SetUserInfo(opts, l->user, password);
    }
    return s;
}

int main(int argc, char **argv)
{
    login l = { 0 };
    int skip = parse_login(argc, argv, &l);
    if (skip < 0) {
        fprintf(stderr, "nats_tail: bad option; before URL: --ca, --cert, --key, --user, --password-file, --creds\n");
        return 2;
    }
    argc -= skip;
    argv += skip;
    const char *mode = argc > 2 && strncmp(argv[2], "--stream-", 9) == 0 ? argv[2] : NULL;
    if (argc < 4 || (!mode && argc < 5) || (mode && strcmp(mode, "--stream-add") == 0 && argc < 5)) {
        fprintf(stderr, "usage: nats_tail URL SUBJECT COUNT SILENCE_MS | URL --stream-count|--stream-age|"
                        "--stream-dump STREAM | URL --stream-add STREAM SUBJECT\n");
        return 2;
    }
    // Back soon after a server restarts: what is published meanwhile is lost to it.
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK)
        s = natsOptions_SetURL(opts, argv[1]);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(opts, 50);
    if (s == NATS_OK)
        s = apply_login(opts, &l);
    if (s == NATS_OK && strncmp(argv[1], "tls://", 6) == 0)
        s = natsOptions_SetSecure(opts, true);
    if (s == NATS_OK)
        s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK)
        return fail("connect", s);
    int rc;
    if (!mode)
        rc = tail(nc, argv[2], atol(argv[3]), atol(argv[4]));
    else if (strcmp(mode, "--stream-count") == 0 || strcmp(mode, "--stream-age") == 0)
        rc = stream_info(nc, argv[3], strcmp(mode, "--stream-age") == 0);
    else if (strcmp(mode, "--stream-add") == 0)
        rc = stream_add(nc, argv[3], argv[4]);
    else if (strcmp(mode, "--stream-dump") == 0)
        rc = stream_dump(nc, argv[3]);
    else
        rc = fail(mode, NATS_INVALID_ARG);
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
