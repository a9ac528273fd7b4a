// Builds a pipeline in C, runs it, and prints what each element did.
//
//   build/samples/sample_count 'testsrc num-buffers=100 ! fakesink checksum=true'
#include <stdio.h>

#include <reel/reel.h>

static void on_message(const reel_message *msg, void *user)
{
    (void)user;
    if (msg->type != REEL_MESSAGE_ERROR)
        printf("[%s] %s%s%s\n", reel_message_type_name(msg->type), msg->element ? msg->element : "",
               msg->element ? ": " : "", msg->text);
}

int main(int argc, char **argv)
{
    reel_init();
    const char *text = argc > 1 ? argv[1] : "testsrc num-buffers=100 ! queue ! fakesink checksum=true";
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.bus_handler = on_message), &err);
    if (!p || reel_pipeline_run(p, &err) < 0) {
        fprintf(stderr, "%s\n", err->message);
        g_error_free(err);
        reel_pipeline_destroy(&p);
        return 1;
    }
    reel_element_report r[16];
    int n = reel_pipeline_report(p, r, 16);
    for (int i = 0; i < n && i < 16; i++)
        printf("%-12s in %-6lld out %-6lld busy %.2f ms\n", r[i].name, (long long)r[i].buffers_in,
               (long long)r[i].buffers_out, r[i].busy_ns / 1e6);
    reel_pipeline_destroy(&p);
    return 0;
}
