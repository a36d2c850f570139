# syntax=docker/dockerfile:1
# One image for both apps; the command picks which one runs.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The packages under libs/ are npm workspaces: their manifests come before the install.
COPY libs/client/package.json libs/client/
COPY libs/workflow/package.json libs/workflow/
COPY libs/worker/package.json libs/worker/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The apps load the built packages through node_modules' workspace links.
COPY --from=build /app/libs/client/package.json ./libs/client/
COPY --from=build /app/libs/client/dist ./libs/client/dist
COPY --from=build /app/libs/workflow/package.json ./libs/workflow/
COPY --from=build /app/libs/workflow/dist ./libs/workflow/dist
COPY --from=build /app/libs/worker/package.json ./libs/worker/
COPY --from=build /app/libs/worker/dist ./libs/worker/dist
USER node
EXPOSE 3000 3001
CMD ["node", "dist/apps/coordinator/apps/coordinator/src/main.js"]
