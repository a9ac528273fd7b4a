// The status page reel serve shows at GET / (serve/page.c).
#ifndef REEL_SERVE_PAGE_H
#define REEL_SERVE_PAGE_H

extern const char serve_page_html[];

#endif
