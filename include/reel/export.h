// reel — what the library exports. libreel.so is built with hidden
// visibility: only declarations marked REEL_API (the public headers') are
// visible to programs that link it.
#ifndef REEL_EXPORT_H
#define REEL_EXPORT_H

#define REEL_API __attribute__((visibility("default")))

#endif
