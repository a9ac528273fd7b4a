// A NATS subscriber for the fleet tests (Debian has no `nats` command):
//
//   nats_tail URL SUBJECT COUNT SILENCE_MS   prints "SUBJECT DATA" per message, one a line,
//                                            until COUNT (0: no limit) or SILENCE_MS without one
//   nats_tail URL --stream-count STREAM      prints how many messages a JetStream stream holds
//
// It prints "ready" on standard error once subscribed. Exit 0, or 1 on an error.
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, natsStatus s)
{
    fprintf(stderr, "nats_tail: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
}

static int stream_count(natsConnection *nc, const char *stream)
{
    jsCtx *js = NULL;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = natsConnection_JetStream(&js, nc, NULL);
    if (s == NATS_OK)
        s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
    if (s == NATS_OK)
        printf("%llu\n", (unsigned long long)si->State.Msgs);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    return s == NATS_OK ? 0 : fail("stream info", s);
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

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[2], "--stream-count") != 0 && argc < 5)) {
        fprintf(stderr, "usage: nats_tail URL SUBJECT COUNT SILENCE_MS | URL --stream-count STREAM\n");
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
        s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK)
        return fail("connect", s);
    int rc = strcmp(argv[2], "--stream-count") == 0 ? stream_count(nc, argv[3])
                                                     : tail(nc, argv[2], atol(argv[3]), atol(argv[4]));
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
