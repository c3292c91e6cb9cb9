// The API router mounts kit.authenticated() with `api.use(...)`, so the type of
// res.locals.store cannot follow the handler: opt into the kit's declaration.
import type {} from 'store-app-kit/locals';
