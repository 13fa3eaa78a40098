# brownout in an image that holds nothing but its static executable: no base image to pull
# from any registry, no shell, no libc. Build the binary first, then the image:
#
#   scripts/build-static                       # → target/static/brownout
#   docker build -t brownout:0.1.0 .
#   docker run --rm brownout:0.1.0 --version
#
# The build context is only the binary (.dockerignore). Runs as an unprivileged user (65532,
# no /etc/passwd needed). See docs/deploy.md for the Kubernetes manifests that use it.
FROM scratch
COPY target/static/brownout /brownout
USER 65532:65532
ENTRYPOINT ["/brownout"]
CMD ["--help"]
