# syntax=docker/dockerfile:1
# One image for both apps; the command picks which one runs.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The packages under packages/ (but the worker, which the worker app compiles from its sources) are npm
# workspaces: their manifests come before the install.
COPY packages/common/package.json packages/common/
COPY packages/client/package.json packages/client/
COPY packages/workflow/package.json packages/workflow/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY packages ./packages
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The apps load the built workspace packages through node_modules' links.
COPY --from=build /app/packages/common/package.json ./packages/common/
COPY --from=build /app/packages/common/dist ./packages/common/dist
COPY --from=build /app/packages/client/package.json ./packages/client/
COPY --from=build /app/packages/client/dist ./packages/client/dist
COPY --from=build /app/packages/client/bin ./packages/client/bin
COPY --from=build /app/packages/workflow/package.json ./packages/workflow/
COPY --from=build /app/packages/workflow/dist ./packages/workflow/dist
USER node
EXPOSE 3000 3001
CMD ["node", "dist/apps/coordinator/apps/coordinator/src/main.js"]
