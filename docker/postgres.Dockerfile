# PostgreSQL for compose.postgres.yaml: the official Alpine image with pgvector added, built from
# the copy in third_party/pgvector (its version is in that folder's Makefile). With it the chunk
# vectors of large collections are searched in the database (documents/pgvector.py); the data
# directory is the official image's, so an install made with postgres:17-alpine keeps its volume.
FROM postgres:17-alpine AS build
RUN apk add --no-cache build-base
COPY third_party/pgvector /build/pgvector
# OPTFLAGS="": no -march=native (the image runs on any x86-64 or arm64 NAS); with_llvm=no: no
# JIT bitcode, which would need clang and llvm in this stage.
RUN make -C /build/pgvector -j"$(nproc)" OPTFLAGS="" with_llvm=no \
 && make -C /build/pgvector install OPTFLAGS="" with_llvm=no

FROM postgres:17-alpine
COPY --from=build /usr/local/lib/postgresql/vector.so /usr/local/lib/postgresql/
COPY --from=build /usr/local/share/postgresql/extension/vector.control /usr/local/share/postgresql/extension/
COPY --from=build /usr/local/share/postgresql/extension/vector--*.sql /usr/local/share/postgresql/extension/
